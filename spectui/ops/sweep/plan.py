"""`spectui sweep`'s plan: the grid, every combination through the resolver for the server's release, equal
effective configs collapsed, refused ones skipped with SGLang's reason, and a duration estimate.

Grid axes (`--grid`):
  FLAG=V1,V2,...          an SGLang flag, written as in `relaunch --set` (no leading dashes)
  env:NAME=V1,V2,...      a variable of the server's environment (`relaunch --set-env`), e.g.
                          env:SPECTUI_SIM_FAULT=-,oom-at-capture injects a simulator fault in one config
A value `-` means "absent": the flag is removed (`--unset`) or the variable unset (`--unset-env`).

Each combination is planned exactly as `relaunch` would plan it (ops.relaunch.plan.build_plan against the running
server): the same edited command, the same resolver verdict. Two combinations with the same effective
config (every ServerArgs field SGLang resolves, plus the env axes' values) are one launch: topk 1 forces
draft tokens = steps + 1, so a grid over draft tokens at topk 1 collapses to `duplicate` rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from spectui.core.launch import flag_values, parse_command, unset_flag
from spectui.errors import UsageError
from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.sources.base import ServerProcess

ABSENT = "-"
ENV_PREFIX = "env:"
SPEC_KEYS = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
             "speculative_num_draft_tokens")
MAX_COMBINATIONS = 256
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_STARTUP_S = 60.0
DEFAULT_PER_REQUEST_TPS = 50.0
STOP_S = 5.0  # SIGTERM -> port and GPU free, per relaunch
LOG_HEAD = 1 << 18  # start-up lines sit at the top of a log


@dataclass(frozen=True, slots=True)
class Axis:
    name: str  # the flag without dashes, or the variable's name
    env: bool
    values: tuple[str | None, ...]  # None: absent

    @property
    def label(self) -> str:
        return f"{ENV_PREFIX}{self.name}" if self.env else self.name

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "values": [ABSENT if v is None else v for v in self.values]}


def parse_grid(items: Sequence[str]) -> list[Axis]:
    axes: list[Axis] = []
    for item in items:
        key, eq, rest = item.partition("=")
        env = key.startswith(ENV_PREFIX)
        name = key[len(ENV_PREFIX):] if env else key.strip().lstrip("-")
        values = [v.strip() for v in rest.split(",")] if eq else []
        if not name or not values or any(v == "" for v in values):
            raise UsageError(f"--grid {item!r}: write it as FLAG=V1,V2,... (e.g. --grid speculative-num-steps=1,3,5) "
                             "or env:NAME=V1,V2 (- for absent)")
        if env and not _ENV_NAME.fullmatch(name):
            raise UsageError(f"--grid {item!r}: {name!r} is not an environment variable name")
        if any(a.label == (f"{ENV_PREFIX}{name}" if env else name) for a in axes):
            raise UsageError(f"--grid {key}: given twice; list every value in one --grid")
        axes.append(Axis(name, env, tuple(None if v == ABSENT else v for v in dict.fromkeys(values))))
    if not axes:
        raise UsageError("give at least one --grid FLAG=V1,V2,...")
    n = 1
    for a in axes:
        n *= len(a.values)
    if n > MAX_COMBINATIONS:
        raise UsageError(f"the grid has {n} combinations (more than {MAX_COMBINATIONS}); make it smaller")
    return axes


def combinations(axes: Sequence[Axis]) -> list[dict[str, str | None]]:
    out: list[dict[str, str | None]] = [{}]
    for axis in axes:
        out = [{**c, axis.label: v} for c in out for v in axis.values]
    return out


def edits_for(values: Mapping[str, str | None], argv: Sequence[str], env: Mapping[str, str]) -> Edits:
    """The relaunch Edits that give a command `values` (axis label -> value, None = absent), relative to
    the command `argv` with environment `env` (an absent flag or variable is only unset when present)."""
    cmd = parse_command(list(argv))
    sets, unsets, env_sets, env_unsets = [], [], [], []
    for label, value in values.items():
        if label.startswith(ENV_PREFIX):
            name = label[len(ENV_PREFIX):]
            if value is not None:
                env_sets.append((name, value))
            elif name in env:
                env_unsets.append(name)
        elif value is not None:
            sets.append((label, value))
        elif unset_flag(cmd, label) != cmd:
            unsets.append(label)
    return Edits(tuple(sets), tuple(unsets), tuple(env_sets), tuple(env_unsets))


def current_values(axes: Sequence[Axis], argv: Sequence[str], env: Mapping[str, str]) -> dict[str, str | None]:
    """What the running command has for each axis (None: absent): the sweep's original."""
    flags = flag_values(parse_command(list(argv)))
    out: dict[str, str | None] = {}
    for a in axes:
        out[a.label] = env.get(a.name) if a.env else flags.get(f"--{a.name}")
    return out


@dataclass
class PlannedConfig:
    index: int
    set: dict[str, str | None]
    status: str  # pending | duplicate | skipped (the run turns pending into ok / failed)
    reason: str | None = None
    same_as: int | None = None
    effective: dict[str, Any] | None = None
    key: str | None = None  # equal keys = the same launch
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "set": {k: ABSENT if v is None else v for k, v in self.set.items()},
                "effective": self.effective, "status": self.status, "reason": self.reason,
                "same_as": self.same_as, "bench": None, "diagnoses": []}


@dataclass
class SweepPlan:
    host_name: str
    server: ServerProcess
    version: str
    version_note: str
    axes: list[Axis]
    configs: list[PlannedConfig]
    original: dict[str, str | None]

    @property
    def to_launch(self) -> list[PlannedConfig]:
        return [c for c in self.configs if c.status == "pending"]


def _shown(effective: Mapping[str, Any], axes: Sequence[Axis]) -> dict[str, Any]:
    keys = [*SPEC_KEYS, *(a.name.replace("-", "_") for a in axes if not a.env)]
    return {k: effective.get(k) for k in dict.fromkeys(keys) if k in effective}


def _refusal(plan: Any) -> str:
    res = plan.resolution
    why = f"SGLang refuses it: {plan.verdict_line.removeprefix('SGLang would ')}"
    explanation = getattr(res.error, "explanation", "") if res.error is not None else ""
    return f"{why} ({explanation})" if explanation else why


def grid_plans(server: ServerProcess, axes: Sequence[Axis], *, host_name: str, server_version: str | None,
               now: datetime | None = None) -> list[Any]:
    """The relaunch plan of every combination, judged with the bundled releases (ops.relaunch.hostjudge re-judges
    a source build's with the host's own SGLang before plan_sweep reads them)."""
    now = now or datetime.now()
    return [build_plan(server, edits_for(values, server.argv, server.env), host_name=host_name, now=now,
                       server_version=server_version) for values in combinations(axes)]


def plan_sweep(server: ServerProcess, axes: Sequence[Axis], *, host_name: str, server_version: str | None,
               now: datetime | None = None, plans: Sequence[Any] | None = None) -> SweepPlan:
    """Every combination planned as relaunch would plan it (`plans`: grid_plans' result, possibly judged by
    the host); nothing on the host changes."""
    plans = list(plans) if plans is not None else grid_plans(server, axes, host_name=host_name,
                                                             server_version=server_version, now=now)
    configs: list[PlannedConfig] = []
    seen: dict[str, int] = {}
    version, note = "", ""
    for i, values in enumerate(combinations(axes)):
        plan = plans[i]
        version, note = plan.version, plan.version_note
        cfg = PlannedConfig(i, dict(values), "pending", warnings=list(plan.resolution.warnings))
        if plan.needs_force:
            cfg.status, cfg.reason = "skipped", _refusal(plan)
        else:
            eff = plan.resolution.effective or {}
            env_part = {a.name: plan.new_env.get(a.name) for a in axes if a.env}
            cfg.effective = _shown(eff, axes) | {f"{ENV_PREFIX}{k}": v for k, v in env_part.items()}
            cfg.key = json.dumps([sorted((k, repr(v)) for k, v in eff.items()), sorted(env_part.items())])
            if cfg.key in seen:
                cfg.status, cfg.same_as = "duplicate", seen[cfg.key]
                cfg.reason = f"same effective config as #{seen[cfg.key]}"
            else:
                seen[cfg.key] = i
        configs.append(cfg)
    original = current_values(axes, server.argv, server.env)
    return SweepPlan(host_name, server, version, note, list(axes), configs, original)


# ---- duration estimate ---------------------------------------------------------------------------------

def _seconds(a: str | None, b: str | None) -> float | None:
    try:
        return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def last_startup_s(host_name: str, history_path: Path | str | None = None) -> float | None:
    """Seconds the last healthy relaunch on this host took from its start to healthy (launch history)."""
    from spectui.ops.history import HistoryStore

    for rec in reversed(HistoryStore(history_path).read(host=host_name)):
        if rec.outcome == "healthy" and (s := _seconds(rec.time, rec.ended)) is not None and s >= 0:
            return s
    return None


def log_startup_s(log_text: str) -> float | None:
    """Start-up seconds from a log's own timestamps: its first stamped line to the ready line."""
    stamp = re.compile(r"\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
    first = ready = None
    for line in log_text.splitlines():
        m = stamp.search(line)
        if not m:
            continue
        first = first or m.group(1)
        if "fired up" in line or "ready to roll" in line:
            ready = m.group(1)
            break
    s = _seconds(first.replace(" ", "T") if first else None, ready.replace(" ", "T") if ready else None)
    return s if s is not None and s >= 0 else None


def bench_seconds(workload: Mapping[str, Any], host_name: str, history_path: Path | str | None = None) -> float:
    """The last bench of the same workload on this host, else requests / concurrency x max_tokens at an
    assumed per-request speed."""
    from spectui.ops.bench.history import bench_records
    from spectui.ops.bench.run import workload_key

    key = workload_key(dict(workload))
    for obj in reversed(bench_records(history_path, host=host_name)):
        res = obj["result"]
        if workload_key(res.get("workload") or {}) == key and isinstance(res.get("duration_s"), int | float):
            return float(res["duration_s"])
    if workload.get("duration_s"):
        return float(workload["duration_s"])
    requests = workload.get("requests") or 64
    waves = requests / max(workload.get("concurrency") or requests, 1)
    return waves * (workload.get("max_tokens") or 256) / DEFAULT_PER_REQUEST_TPS


def estimate(launches: int, startup_s: float | None, bench_s: float, warmup: int, *,
             baseline: bool = False) -> dict[str, Any]:
    """Seconds the sweep should take; `baseline`: two benches and two launches more (--baseline)."""
    start = startup_s if startup_s is not None else DEFAULT_STARTUP_S
    one_bench = bench_s * (1 + (warmup > 0) * 0.1)
    per = STOP_S + start + one_bench
    extra = (2 * per + one_bench) if baseline else 0.0
    return {"launches": launches + 1 + 2 * baseline, "per_config_s": round(per, 1), "startup_s": round(start, 1),
            "startup_source": "measured" if startup_s is not None else "assumed",
            "bench_s": round(bench_s, 1), "total_s": round(per * launches + STOP_S + start + extra, 1),
            "baseline": baseline}


async def estimate_for(host: Any, plan: Any, options: Any) -> dict[str, Any]:
    """The plan's estimated duration: start-up from the launch history, else the running server's log."""
    startup = last_startup_s(host.name, options.history_path)
    source = "launch history"
    if startup is None and plan.server.log_path:
        try:
            head = await host.read_range(plan.server.log_path, 0, LOG_HEAD)
            startup = log_startup_s(head.decode("utf-8", "replace"))
            source = "the running server's log"
        except Exception:  # a log we cannot read only costs the estimate its measured start-up
            startup = None
    wl = workload_of(options)
    out = estimate(len(plan.to_launch), startup, bench_seconds(wl, host.name, options.history_path), wl["warmup"],
                   baseline=getattr(options, "measure_baseline", False))
    out["startup_from"] = source if startup is not None else "assumed (no start-up measured)"
    return out


def workload_of(opt: Any) -> dict[str, Any]:
    """The sweep's workload (its SweepOptions' bench config and prompts), as the journal records it."""
    c = opt.bench
    return {"requests": c.requests, "duration_s": c.duration_s, "concurrency": c.concurrency, "rate": c.rate,
            "warmup": c.warmup, "max_tokens": c.max_tokens, "temperature": c.temperature,
            "prompts": getattr(opt.prompts, "name", None)}
