"""One line under the header: the server's phases with their durations, launch after launch.

    phases  #1 loading 6s › KV cache 1s › CUDA graphs 4s › ready 0s › serving 12m › stopped  ┃ #2 loading 3s › …

The newest launches that fit are shown (older ones behind a leading "…"); the current step is bold, its
time so far in 5 s steps, then minutes (a quiet cockpit repaints the line every 5 s, then once a minute).
Values come from ui/phases.PhaseTimeline; the widget only renders, and repaints when the text changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.ui.phases import Step

STEP_STYLES = {"crashed": "bold white on red", "stopped": "bold red", "gone": "bold white on red", "serving": "green",
               "ready": "green"}


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s" if seconds >= 0.05 else "0s"
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def running_duration(seconds: float) -> str:
    """The current step's time so far, in the steps the line repaints at: 5 s in the first minute, then
    minutes (like the header's last-line age), so a quiet cockpit repaints it every 5 s, then once a minute,
    not every second. A step that ended shows its exact duration (format_duration)."""
    if seconds < 60:
        return f"{int(seconds) // 5 * 5}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def launch_text(steps: Sequence[Step], now: float, last: tuple[float, int | None] | None) -> Text:
    t = Text(no_wrap=True, end="")
    t.append(f"#{steps[0].launch} ", "bold")
    for i, s in enumerate(steps):
        if i:
            t.append(" › ", "dim")
        style = STEP_STYLES.get(s.name, "")
        if s.end_wall is None:
            style = (style + " bold").strip()
        if s.final:
            t.append(s.label, style)  # an end, not a span of time
            continue
        shown = running_duration if s.end_wall is None else format_duration
        t.append(f"{s.label} {shown(s.duration(now, last))}", style)
    return t


def compact_text(steps: Sequence[Step], now: float, last: tuple[float, int | None] | None) -> Text:
    """An older launch in short: start-up time, serving time, how it ended."""
    t = Text(no_wrap=True, end="")
    t.append(f"#{steps[0].launch} ", "bold")
    startup = sum(s.duration(now, last) for s in steps if s.name not in ("serving", "crashed", "stopped"))
    t.append(f"start-up {format_duration(startup)}")
    for s in steps:
        if s.name == "serving":
            t.append(" › ", "dim")
            shown = running_duration if s.end_wall is None else format_duration
            t.append(f"serving {shown(s.duration(now, last))}", STEP_STYLES["serving"])
        elif s.final:
            t.append(" › ", "dim")
            t.append(s.label, STEP_STYLES[s.name])
    return t


def timeline_text(steps: Sequence[Step], now: float, last: tuple[float, int | None] | None, width: int) -> Text:
    """The line for `width` cells: the newest launches that fit."""
    launches: list[list[Step]] = []
    for s in steps:
        if not launches or launches[-1][0].launch != s.launch:
            launches.append([])
        launches[-1].append(s)
    head = Text(end="")
    head.append(" phases ", "bold reverse")  # a span, not the Text's base style (which + would spread)
    if not launches:
        head.append("  (no start-up seen in this log yet)", "dim")
        return head
    shown: list[Text] = []
    room = max(10, width - len(head) - 2)
    for group in reversed(launches):  # newest first; the older ones are not rendered once the line is full
        part = launch_text(group, now, last)
        need = len(part) + (3 if shown else 0)
        if shown and need > room:
            part = compact_text(group, now, last)  # an older launch that does not fit whole: in short
            need = len(part) + 3
            if need > room:
                break
        shown.insert(0, part)
        room -= need
    out = head.copy()
    out.append(" ")
    if len(shown) < len(launches):
        out.append("… ", "dim")
    for i, part in enumerate(shown):
        if i:
            out.append(" ┃ ", "dim")
        out.append_text(part)
    return out


class PhaseTimelineBar(Widget):
    """Set with `show(steps, now, last)`; it repaints only when the rendered text changes."""

    DEFAULT_CSS = """
    PhaseTimelineBar { height: 1; width: 100%; background: $panel; }
    """

    text: reactive[Text] = reactive(Text, layout=False)

    def show(self, steps: Sequence[Step], now: float, last: tuple[float, int | None] | None = None) -> None:
        self._shown = (steps, now, last)
        text = timeline_text(steps, now, last, self.size.width or self.app.size.width)
        if text.plain != self.text.plain:
            self.text = text

    def on_resize(self) -> None:
        if getattr(self, "_shown", None) is not None:
            self.show(*self._shown)

    @property
    def plain(self) -> str:
        return self.text.plain

    def render(self) -> Text:
        t = self.text.copy()
        t.no_wrap, t.overflow = True, "ellipsis"
        return t
