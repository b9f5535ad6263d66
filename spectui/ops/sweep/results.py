"""A sweep's results: rows from the bench outcomes, the best pick and the Pareto front (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spectui.errors import UsageError

# Diagnosis categories a sweep records but that do not end a measurement (they are what it measures), and the
# order in which the fatal ones name a failed config's cause.
ADVISORY = ("silent-override", "low-accept-length", "spec-slower-than-baseline", "capacity")
_FATAL_ORDER = ("oom", "cuda-graph", "nccl", "weight-load", "hidden-state-mismatch", "crash", "port-in-use",
                "invalid-argument", "unrecognized-argument")


def cause_of(diagnoses: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    errors = [d for d in diagnoses if d.get("severity") == "error" and d.get("category") not in ADVISORY]
    for cat in _FATAL_ORDER:
        for d in errors:
            if d.get("category") == cat:
                return d
    return errors[0] if errors else None


def reason_of(d: Mapping[str, Any]) -> str:
    ev = d.get("evidence") or []
    return f"{d.get('rule')}: {d.get('title')}" + (f" [{ev[0]}]" if ev else "")


def check_resume(journal: Any, axes: Sequence[Any]) -> None:
    """The journal's grid must be the one given (or none given: the journal's own)."""
    want = [a.to_json() for a in axes]
    if journal.header and journal.header.get("grid") != want:
        raise UsageError(f"--resume {journal.path}: the journal is for the grid "
                         f"{' '.join(g['label'] + '=' + ','.join(g['values']) for g in journal.header['grid'])}; "
                         "give the same --grid (or none)")


def per_request(entry: Mapping[str, Any]) -> float | None:
    v = ((entry.get("bench") or {}).get("per_request_tokens_per_s") or {}).get("mean")
    return float(v) if isinstance(v, int | float) else None


def aggregate(entry: Mapping[str, Any]) -> float | None:
    v = (entry.get("bench") or {}).get("output_tokens_per_s")
    return float(v) if isinstance(v, int | float) else None


def accept_len(entry: Mapping[str, Any]) -> float | None:
    v = ((entry.get("bench") or {}).get("spec") or {}).get("accept_len")
    return float(v) if isinstance(v, int | float) else None


def _measured(configs: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i, c in enumerate(configs) if c.get("status") == "ok" and per_request(c) is not None]


def best_index(configs: Sequence[Mapping[str, Any]]) -> int | None:
    """The ok config with the highest per-request speed (ties: higher aggregate tok/s, then first)."""
    ok = _measured(configs)
    if not ok:
        return None
    return max(ok, key=lambda i: (per_request(configs[i]), aggregate(configs[i]) or 0.0, -i))


def pareto(configs: Sequence[Mapping[str, Any]]) -> list[int]:
    """ok configs no other ok config beats on both per-request speed and aggregate tok/s."""
    ok = _measured(configs)
    pts = {i: (per_request(configs[i]) or 0.0, aggregate(configs[i]) or 0.0) for i in ok}

    def dominated(i: int) -> bool:
        a = pts[i]
        return any(b[0] >= a[0] and b[1] >= a[1] and b != a for j, b in pts.items() if j != i)

    return sorted((i for i in ok if not dominated(i)), key=lambda i: -pts[i][0])


def why_best(configs: Sequence[Mapping[str, Any]], best: int | None, baseline: Mapping[str, Any] | None) -> str:
    if best is None:
        return "no config was measured"
    b = configs[best]
    rivals = [i for i in _measured(configs) if i != best]
    out = f"#{best} has the highest per-request speed, {per_request(b):.1f} tok/s"
    if rivals:
        nxt = max(rivals, key=lambda i: per_request(configs[i]) or 0.0)
        out += f" (next: #{nxt} at {per_request(configs[nxt]):.1f})"
    if aggregate(b) is not None:
        out += f", {aggregate(b):.1f} tok/s aggregate"
    if accept_len(b) is not None:
        out += f", accept len {accept_len(b):.2f}"
    up = ((b.get("bench") or {}).get("speedup") or {}).get("output_tokens_per_s")
    if up is not None and baseline:
        out += f", {up:.2f}x the baseline"
    return out


def baseline_of(configs: Sequence[Mapping[str, Any]], given: float | None) -> dict[str, Any] | None:
    if given is not None:
        return {"output_tokens_per_s": given, "source": "given"}
    for c in configs:
        base = (c.get("bench") or {}).get("baseline")
        if base:
            return {"output_tokens_per_s": base.get("output_tokens_per_s"), "source": base.get("source")}
    return None


def depth_of(entry: Mapping[str, Any]) -> int | None:
    v = (entry.get("effective") or {}).get("speculative_num_steps")
    return v if isinstance(v, int) else None


def summary(configs: list[dict[str, Any]], *, launches: int, applied: str | None,
            baseline_tps: float | None, baseline: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The `sweep --json` object of CONTRACTS.md (plus `why`, `journal`, `restore` …); `baseline`: the one
    measured by --baseline (source "measured"), else the given or found one."""
    best = best_index(configs)
    base = baseline or baseline_of(configs, baseline_tps)
    return {"configs": configs, "launches": launches, "best": best, "pareto": pareto(configs),
            "applied": applied, "baseline": base, "why": why_best(configs, best, base), **extra}


_SHORT = {"speculative-num-steps": "steps", "speculative-eagle-topk": "topk",
          "speculative-num-draft-tokens": "ndt", "speculative-algorithm": "algo"}


def set_text(shown: Mapping[str, Any]) -> str:
    return " ".join(f"{_SHORT.get(k, k.removeprefix('env:').removeprefix('speculative-'))}={v}"
                    for k, v in shown.items())


def eff_text(eff: Mapping[str, Any] | None) -> str:
    if not eff:
        return "-"
    s, t, d = (eff.get(k) for k in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"))
    out = f"{s}/{t}/{d}" if any(v is not None for v in (s, t, d)) else ""
    extra = [f"{k[4:]}={v}" for k, v in eff.items() if k.startswith("env:") and v is not None]
    return " ".join([out, *extra]).strip() or "-"
