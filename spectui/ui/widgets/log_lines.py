"""The log pane's text: each line's display form (sanitised in the parse worker) and its rendered row.

Every line is rendered as plain text with its kind's style — never markup. A row is the gutter (line
number) and the line as two segments; a search match or the cursor need rich Text spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from spectui.core.text import DISPLAY_CAP
from spectui.core.text import terminal_safe as sanitize

KIND_STYLES: dict[str, Style] = {
    "decode": Style(color="green"),
    "prefill": Style(color="cyan"),
    "milestone": Style(color="blue", bold=True),
    "warning": Style(color="yellow"),
    "error": Style(color="red", bold=True),
    "other": Style(),
}
_GUTTER = Style(dim=True)
_PLAIN = Style()
MARKER = Style(color="black", bgcolor="yellow")
_CURSOR = Style(reverse=True)
_MATCH = Style(color="black", bgcolor="magenta", bold=True)


# spectui's own probes as SGLang's access log (uvicorn) prints them: `INFO:     127.0.0.1:5432 - "GET /health
# HTTP/1.1" 200 OK`. The log pane hides them by default (`p` shows them): a cockpit polling every second
# otherwise fills the pane with its own requests (#22, #24). A scraper's GET /metrics looks the same.
PROBE_PATHS = ("health", "health_generate", "server_info", "get_server_info", "metrics")
_PROBE_RE = re.compile(r'"(?:GET|HEAD) /(?:' + "|".join(PROBE_PATHS) + r')(?:\?[^ "]*)? HTTP/[0-9.]+"')


def is_probe(text: str) -> bool:
    """An access-log line of a /health, /server_info or /metrics request (spectui's own probes)."""
    return "HTTP/" in text and _PROBE_RE.search(text) is not None


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A user's pattern as a regex: regex when it compiles, else literal; smart case (lower = ignore case)."""
    flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE
    try:
        return re.compile(pattern, flags)
    except re.error:
        return re.compile(re.escape(pattern), flags)


def prepare_lines(lines: Iterable[str]) -> tuple[list[str], int]:
    """Display text of each line and the widest one's cell width (pure: safe in a worker thread).

    A printable ASCII line (nearly every SGLang line) is its own display text, one cell a character: two
    C-level tests instead of the sanitiser's passes and a cell count."""
    new: list[str] = []
    widest = 0
    for line in lines:
        if line.isascii() and line.isprintable() and len(line) <= DISPLAY_CAP:
            width = len(line)
        else:
            line = sanitize(line)
            width = cell_len(line)
        new.append(line)
        if width > widest:
            widest = width
    return new, widest


def batch_kinds(ranges: Iterable[tuple[int, int, str]], first_no: int, count: int) -> list[tuple[int, int, str | list[str]]]:
    """A batch's kind ranges for LogView.mark_kinds in a form it applies in a few steps (run in the parse
    worker: the UI thread then does one slice assignment for the batch, not one Python step per line).

    The batch holds lines first_no .. first_no+count-1, all of kind "other" until marked: its ranges become
    one list of kinds, one per line; error ranges (each starts an error block, for e/E) and ranges wholly
    outside the batch follow as they are. The result marks exactly what the ranges in order would; when a
    range straddles the batch's edge or overwrites an error block seen before it, they are passed as given."""
    ranges = list(ranges)
    end = first_no + count - 1
    kinds = ["other"] * count
    tail: list[tuple[int, int, str | list[str]]] = []
    error_last: int | None = None
    for first, last, kind in ranges:
        inside = first_no <= first and last <= end
        if (not inside and last >= first_no and first <= end) or (
                inside and error_last is not None and first <= error_last):
            return list(ranges)  # order matters there: no reordering
        if not inside or kind == "error":
            tail.append((first, last, kind))
            if inside:
                error_last = last if error_last is None else max(error_last, last)
        elif first == last:
            kinds[first - first_no] = kind
        else:
            kinds[first - first_no : last - first_no + 1] = [kind] * (last - first + 1)
    return [(first_no, end, kinds), *tail] if count > 0 else tail


def render_row(no: int | None, line: str, kind: str, search: re.Pattern[str] | None, cursor: bool,
               console: Console) -> Strip:
    """Line `no` (of its file; None: a line of spectui's own, no number) as a row of the pane (uncropped)."""
    gutter = f"{no:>7} " if no is not None else "        "
    if search is None and not cursor:
        # The common row: gutter + one style, two segments (what Text.render yields, ~15x cheaper).
        body = [Segment(line, KIND_STYLES.get(kind, _PLAIN))] if line else []
        return Strip([Segment(gutter, _GUTTER), *body])
    text = Text(no_wrap=True, end="")
    text.append(gutter, _GUTTER)
    body_text = Text(line, style=KIND_STYLES.get(kind, _PLAIN), no_wrap=True, end="")
    if search is not None:
        for m in search.finditer(line):
            if m.end() > m.start():
                body_text.stylize(_MATCH, m.start(), m.end())
    text.append_text(body_text)
    if cursor:
        text.stylize(_CURSOR)
    return Strip(text.render(console))
