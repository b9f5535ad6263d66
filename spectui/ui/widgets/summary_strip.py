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

    @property
    def speedup(self) -> float | None:
        if self.baseline_tps and self.tokens_per_s is not None:
            return self.tokens_per_s / self.baseline_tps
        return None


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
    return TabSummary(label, str(phase), al, tps, baseline_tps, worst, group)


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
        mark, style = SEVERITY_MARKS.get(e.worst or "", ("", ""))
        if mark:
            t.append(f" {mark}", style)
        t.append(" │", "dim")
        return t
