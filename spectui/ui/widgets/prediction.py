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
                    accept_len: float | None) -> Text | None:
    """'steps A→B: accept len X → predicted Y (lo–hi)' for a changed chain depth, else None."""
    from spectui.core.specdec import Observed, advise
    from spectui.errors import InputError

    k0, k1 = _chain_steps(old), _chain_steps(new)
    if k0 is None or k1 is None or k0 == k1 or accept_len is None:
        return None
    try:
        adv = advise([Observed(k0, min(accept_len, k0 + 1.0))], max_steps=max(k0, k1, 1))
    except InputError:
        return None
    row = adv.row(k1)
    t = Text()
    t.append("predicted  ", "bold")
    t.append(f"steps {k0}→{k1}: accept len {accept_len:.1f} → predicted ")
    t.append(f"{row.accept_len:.1f}", "bold cyan")
    t.append(f" ({row.low:.1f}–{row.high:.1f})", "dim")
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
        self.show(self._old[2], new, observed_accept_len(cockpit))

    def show(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, accept_len: float | None) -> None:
        self.update(prediction_text(old, new, accept_len) or Text())
