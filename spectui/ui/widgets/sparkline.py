"""A one-line sparkline as rich Text, with relaunch boundaries drawn as a `│` between launches.

Textual's Sparkline cannot mark positions, and the boundary is the point of the plot (before/after a
relaunch), so this renders block characters itself. Pure function of its inputs: deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(
    segments: Sequence[Sequence[float | None]],
    width: int,
    *,
    style: str = "green",
    low: float | None = None,
    high: float | None = None,
) -> Text:
    """Plot the last `width` cells of `segments` (one per launch, oldest first) on one line.

    Missing values (None) are drawn as a space. The scale is shared by all segments so a drop after a
    relaunch is visible as a drop.
    """
    tail: list[Sequence[float | None | str]] = []  # the newest pieces, enough to fill `width` cells
    room = width
    for i in range(len(segments) - 1, -1, -1):
        if room <= 0:
            break
        tail.append(segments[i][-room:])
        room -= len(tail[-1])
        if i and any(len(seg) for seg in segments[:i]):  # a boundary before it, as between any two launches
            tail.append(("│",))
            room -= 1
    cells = [c for piece in reversed(tail) for c in piece][-width:] if width > 0 else []
    values = [c for c in cells if isinstance(c, (int, float))]
    text = Text(no_wrap=True, end="")
    if not values:
        return text
    lo = min(values) if low is None else low
    hi = max(values) if high is None else high
    span = hi - lo
    run: list[str] = []
    run_style = ""  # consecutive cells of one style go in as one span, not one span a cell
    for c in cells:
        if c == "│":
            char, cell_style = "│", "bold magenta"
        elif c is None or isinstance(c, str):
            char, cell_style = " ", ""
        else:
            level = 0 if span <= 0 else int((min(max(c, lo), hi) - lo) / span * (len(BLOCKS) - 1) + 0.5)
            char, cell_style = BLOCKS[level], style
        if cell_style != run_style and run:
            text.append("".join(run), run_style)
            run.clear()
        run.append(char)
        run_style = cell_style
    if run:
        text.append("".join(run), run_style)
    return text
