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
    cells: list[float | None | str] = []
    for i, seg in enumerate(segments):
        if i and cells:
            cells.append("│")
        cells.extend(seg)
    cells = cells[-width:] if width > 0 else []
    values = [c for c in cells if isinstance(c, (int, float))]
    text = Text(no_wrap=True, end="")
    if not values:
        return text
    lo = min(values) if low is None else low
    hi = max(values) if high is None else high
    span = hi - lo
    for c in cells:
        if c == "│":
            text.append("│", "bold magenta")
        elif c is None or isinstance(c, str):
            text.append(" ")
        else:
            level = 0 if span <= 0 else int((min(max(c, lo), hi) - lo) / span * (len(BLOCKS) - 1) + 0.5)
            text.append(BLOCKS[level], style)
    return text
