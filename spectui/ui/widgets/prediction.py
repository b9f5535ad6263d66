"""The relaunch screen's predicted effect of an edit, beside the resolver's verdict: the advisor
(core.specdec) fitted to the running server's observed accept length, read at the edited depth, e.g.
"steps 1→15: accept len 1.8 → predicted 4.2 (3.7–4.6)". Chains (topk 1) only; nothing when the depth does
not change, when no accept length was observed yet, or when the edit does not resolve."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widgets import Static

MAX_STEPS = 32


def _chain_steps(effective: Mapping[str, Any] | None) -> int | None:
    if not effective or not effective.get("speculative_algorithm"):
        return None
    steps, topk = effective.get("speculative_num_steps"), effective.get("speculative_eagle_topk")
    return steps if isinstance(steps, int) and steps >= 1 and topk in (1, None) else None


def observed_accept_len(cockpit: Any) -> float | None:
    """The mean accept length of the followed log (the cockpit's metrics snapshot), when there is one."""
    stat = getattr(getattr(cockpit, "snapshot", None), "accept_len", None)
    value = getattr(stat, "mean", None)
    return float(value) if isinstance(value, int | float) and value >= 1.0 else None


def observed_speeds(cockpit: Any) -> tuple[float | None, float | None, int | None]:
    """(per-request tok/s, per-request baseline at the same concurrency, running) from the cockpit: exactly
    what the rules give the advisor (core.rules.spec_math), so the screen and the rules speak with one voice."""
    from spectui.core.rules import baseline_ratio

    snap = getattr(cockpit, "snapshot", None)
    tps = getattr(getattr(snap, "gen_tokens_per_s", None), "mean", None)
    running = getattr(snap, "running_req", None)
    batch = max(float(running), 1.0) if isinstance(running, int | float) else 1.0
    per_request = tps / batch if isinstance(tps, int | float) and tps > 0 else None
    baseline = getattr(cockpit, "baseline", None)
    same = baseline_ratio(tps, running, baseline) is not None
    return per_request, float(baseline) / batch if same else None, round(batch)


def effective_of(cmd: Any, version: str | None) -> Mapping[str, Any] | None:
    """What SGLang `version` makes of the running command (None when unknown or refused)."""
    if cmd is None:
        return None
    from spectui.core.launch import pick_version, resolve

    try:
        res = resolve(list(cmd.sglang_args), pick_version(version)[0], env=dict(cmd.env))
    except ValueError:
        return None
    return res.effective


def prediction_text(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
                    accept_len: float | None, speeds: tuple[float | None, float | None, int | None] = (None, None, None)
                    ) -> Text | None:
    """'steps A→B: accept len X → predicted Y (lo–hi), ×S vs no speculation' for a changed chain depth, else
    None. `speeds`: observed_speeds(cockpit), the rules' inputs to the advisor."""
    from spectui.core.specdec import Observed, advise
    from spectui.errors import InputError

    k0, k1 = _chain_steps(old), _chain_steps(new)
    if k0 is None or k1 is None or k0 == k1 or accept_len is None:
        return None
    try:
        tps, base, running = speeds
        adv = advise([Observed(k0, min(accept_len, k0 + 1.0), tps)], base, running, max_steps=max(k0, k1, 10),
                     running_steps=k0)
    except InputError:
        return None
    row = adv.row(k1)
    t = Text()
    t.append("predicted  ", "bold")
    t.append(f"steps {k0}→{k1}: accept len {accept_len:.1f} → predicted ")
    t.append(f"{row.accept_len:.1f}", "bold cyan")
    t.append(f" ({row.low:.1f}–{row.high:.1f})", "dim")
    if row.speedup is not None and adv.cost.known:
        basis = "against the baseline" if adv.baseline_source != "modelled" else "modelled: no baseline"
        t.append(f", ×{row.speedup:.2f} vs no speculation", "bold red" if row.speedup < 1.0 else "bold green")
        t.append(f" ({basis})", "dim")
    best = adv.recommend
    if best.off:
        t.append("; the model says no depth beats plain decode here", "yellow")
    elif best.steps != k1:
        t.append(f"; best predicted depth: steps {best.steps}", "dim")
    t.append("\n")
    return t


class Prediction(Static):
    """Shows `prediction_text` for the edit being made; empty when there is nothing to predict."""

    DEFAULT_CSS = "Prediction { height: auto; }"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._old: tuple[Any, Any, Mapping[str, Any] | None] | None = None  # (command, version, effective)

    def show_for(self, original: Any, version: str | None, evaluation: Any, cockpit: Any) -> None:
        """The relaunch screen's one call: the running command (resolved once), the edited one's
        resolution (`evaluation.resolution`) and the cockpit's observed accept length."""
        if self._old is None or self._old[0] is not original or self._old[1] != version:
            self._old = (original, version, effective_of(original, version))
        new = getattr(getattr(evaluation, "resolution", None), "effective", None)
        self.show(self._old[2], new, observed_accept_len(cockpit), observed_speeds(cockpit))

    def show(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, accept_len: float | None,
             speeds: tuple[float | None, float | None, int | None] = (None, None, None)) -> None:
        self.update(prediction_text(old, new, accept_len, speeds) or Text())
