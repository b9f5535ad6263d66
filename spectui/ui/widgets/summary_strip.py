"""Summary strip across tabs: per server its number, label, phase, accept len, tok/s, × baseline, worst diagnosis.

One line (wrapping to two on a narrow terminal is avoided: entries shorten first). Set `entries` and
`active`; an unchanged value does not repaint (the values are frozen and compared).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.ui.widgets.header import PHASE_STYLES

SEVERITY_MARKS = {"error": ("✖", "bold red"), "warning": ("▲", "bold yellow"), "info": ("●", "cyan")}


@dataclass(frozen=True, slots=True)
class TabSummary:
    label: str
    phase: str = "unknown"
    accept_len: float | None = None
    tokens_per_s: float | None = None
    baseline_tps: float | None = None
    worst: str | None = None  # worst diagnosis severity: "error" / "warning" / "info" / None
    group: bool = False
    running: float | None = None  # running requests of the window the tok/s is from

    @property
    def speedup(self) -> float | None:
        """Per request against a baseline of the same concurrency, as the speculative panel and SPEC026 (#23):
        a baseline of unknown load (`baseline-tps=T`) is a single stream's. None: nothing comparable."""
        from spectui.core.rules import BaselineTps, baseline_ratio

        if not self.baseline_tps or self.tokens_per_s is None or not self.running:
            return None
        base = self.baseline_tps if getattr(self.baseline_tps, "running", None) else BaselineTps(
            float(self.baseline_tps), running=1)
        if baseline_ratio(self.tokens_per_s, self.running, base) is None:
            return None
        return (self.tokens_per_s / self.running) / (float(base) / base.running)


def summarize(label: str, update: object | None, *, baseline_tps: float | None = None,
              group: bool = False) -> TabSummary:
    """A TabSummary from a dashboard's last CockpitUpdate (duck-typed: snapshot, diagnoses)."""
    snap = getattr(update, "snapshot", None)
    phase = getattr(getattr(snap, "phase", None), "value", None) or "unknown"
    al = getattr(getattr(snap, "accept_len", None), "last", None) if getattr(snap, "samples", 0) else None
    tps = getattr(getattr(snap, "gen_tokens_per_s", None), "last", None)
    order = {"error": 0, "warning": 1, "info": 2}
    worst = min((d.severity for d in getattr(update, "diagnoses", ()) or ()), key=lambda s: order.get(s, 3),
                default=None)
    running = getattr(snap, "running_req", None)
    return TabSummary(label, str(phase), al, tps, baseline_tps, worst, group,
                      float(running) if isinstance(running, int | float) else None)


class SummaryStrip(Widget):
    DEFAULT_CSS = """
    SummaryStrip { height: 1; background: $boost; }
    """

    entries: reactive[tuple[TabSummary, ...]] = reactive((), layout=False)
    active: reactive[int] = reactive(0, layout=False)

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        n = len(self.entries) or 1
        width = max(24, (self.size.width or 160) // n)  # shorten entries before they run off the edge
        for i, e in enumerate(self.entries):
            t.append_text(self._entry(i, e, i == self.active, width))
        return t

    @staticmethod
    def _entry(i: int, e: TabSummary, active: bool, width: int) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        key = f" {i + 1} " if i < 9 else "   "
        t.append(key, "bold reverse" if active else "bold")
        label = e.label if len(e.label) <= max(6, width - 24) else e.label[: max(5, width - 25)] + "…"
        t.append(f"{label} ", "bold underline" if active else "")
        phase = e.phase if e.phase != "unknown" else "?"
        t.append(phase[:9].upper(), PHASE_STYLES.get(e.phase, "dim").replace("bold black on ", "").replace(
            "bold white on ", "") or "dim")
        t.append(f" {e.accept_len:.2f}" if e.accept_len is not None else " –", "bold")
        if width >= 34:
            t.append(f" {e.tokens_per_s:.0f}t/s" if e.tokens_per_s is not None else "", "cyan")
        if e.speedup is not None:
            t.append(f" ×{e.speedup:.2f}", "green" if e.speedup >= 1 else "bold red")
        elif e.baseline_tps and e.tokens_per_s is not None:
            t.append(" ×–", "dim")  # a baseline, but not at this concurrency: no number (#23)
        mark, style = SEVERITY_MARKS.get(e.worst or "", ("", ""))
        if mark:
            t.append(f" {mark}", style)
        t.append(" │", "dim")
        return t
