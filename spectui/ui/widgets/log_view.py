"""Log pane: a bounded, virtual-scroll view of the followed log with follow/pause, search, filter, error jumps.

Lines are kept once, sanitised, in a list bounded at `max_lines` (older lines dropped in chunks, a marker row
says how many); only visible rows are rendered (Line API, like toolong), each once until it changes (a row
cache). Every line is plain text (log_lines.py), never markup. Kinds (decode, warning, error, ...) come from
the parser through `mark_kinds`, so colouring and `e`/`E` agree with what the rules saw."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.ui.widgets import log_lines
from spectui.ui.widgets.log_lines import KIND_STYLES, MARKER, compile_pattern, prepare_lines, render_row
from spectui.ui.widgets.log_search import LogSearch

is_probe = log_lines.is_probe

__all__ = ["KIND_STYLES", "LogView", "compile_pattern", "prepare_lines"]


class LogView(LogSearch, ScrollView, can_focus=True):
    """The log pane. Keys live on the dashboard screen so they work whatever has focus.

    Line numbers inside are the view's (one run across relaunch files); the gutter shows each file's own
    (`begin_file`). spectui's own probe lines (log_lines.is_probe) are hidden unless `show_probes`."""

    DEFAULT_CSS = """
    LogView { height: 1fr; }
    """

    following: reactive[bool] = reactive(True)

    class StateChanged(Message):
        """Follow, filter or search state changed (the screen shows it)."""

    def __init__(self, *, max_lines: int = 50_000, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self._texts: list[str] = []
        self._kinds: list[str] = []
        self._first_no = 1  # line number of _texts[0]
        self.dropped = 0  # lines dropped from the front (the marker row reports it)
        self._width = 0
        self._filter: re.Pattern[str] | None = None
        self._filter_inverse = False
        self._view: list[int] | None = None  # line numbers passing the filter (sorted)
        self._search: re.Pattern[str] | None = None
        self._hits: list[int] | None = None  # line numbers in view matching the search (log_search.py)
        self.show_probes = False  # spectui's own GET /health, /server_info, /metrics lines (`p`)
        self.probes = 0  # probe lines held
        self._file_starts: list[int] = []  # view line numbers where a followed file (a relaunch's) begins
        self._own_lines: set[int] = set()  # spectui's marker lines (no file line number)
        self._search_typed = ""
        self._filter_typed = ""
        self.cursor: int | None = None  # line number under the cursor (search hit, error jump)
        self.unseen = 0  # lines arrived while paused
        self._error_starts: set[int] = set()
        self._cache: LRUCache[int, Strip] = LRUCache(1024)  # row -> uncropped strip
        self._row_style: Style | None = None  # rich_style during one render_lines

    # ---- feeding -------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        return len(self._texts)

    @property
    def last_line_no(self) -> int:
        return self._first_no + len(self._texts) - 1

    def append_lines(self, lines: Iterable[str], first_line: int | None = None) -> None:
        """Add raw lines (one batch). `first_line` is the number of the first one in the stream."""
        self.append_prepared(prepare_lines(lines), first_line)

    def append_prepared(self, prepared: tuple[list[str], int], first_line: int | None = None) -> None:
        """Add lines already passed through `prepare_lines` (which a worker thread can run)."""
        new, width = prepared
        if first_line is not None and not self._texts and self.dropped == 0:
            self._first_no = max(1, first_line)  # a tail that starts mid-file (backfill)
        start_no = self.last_line_no + 1
        if not new:
            return
        self._texts.extend(new)
        self._kinds.extend(["other"] * len(new))
        self._width = max(self._width, width + 8)
        probes = sum(1 for t in new if is_probe(t))
        self.probes += probes
        if self._view is None and probes and not self.show_probes:
            self._rebuild_view()  # the first probe line: a view without them from now on (hits recounted)
        else:
            if self._view is not None:
                self._view.extend(start_no + i for i, t in enumerate(new) if self._passes_view(t))
            self._hits_extend(start_no, new)
        pruned = self._prune()
        if not self.following:
            self.unseen += len(new)
        if not self.following or probes or self._hits is not None or self._filter is not None:
            self.post_message(self.StateChanged())  # the title counts: "PAUSED (+N new)", hits, probe lines
        self._update_size()
        if self.following:
            self._stick_to_end()
            self.refresh()
        elif pruned or self._first_row(start_no) < self._bottom_row():
            self.refresh()  # paused: only when rows on screen changed (new ones below it just grow the scrollbar)

    def _stick_to_end(self) -> None:
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        # The new virtual size reaches the scrollbars on the next layout: scroll again after it.
        self.call_after_refresh(self._stick_if_following)

    def _stick_if_following(self) -> None:
        if self.following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_resize(self) -> None:
        if self.following:
            self._stick_to_end()

    def mark_kinds(self, ranges: Iterable[tuple[int, int, str | list[str]]]) -> None:
        """Record the parser's kind for lines first..last (inclusive) that are still held; one repaint.

        A range's kind is one kind for all its lines, or a list of one kind per line (log_lines.batch_kinds
        makes a batch's ranges into one such list in the parse worker)."""
        shown = False
        base, last_held = self._first_no, self.last_line_no
        kinds = self._kinds
        top, bottom = int(self.scroll_offset.y), self._bottom_row()
        cached_hi = max(self._cache.keys(), default=-1)  # fresh rows are not cached: nothing to drop there
        for first, last, kind in ranges:
            lo, hi = max(first, base) - base, min(last, last_held) - base
            if hi < lo:
                continue
            if isinstance(kind, str):
                kinds[lo : hi + 1] = [kind] * (hi - lo + 1)
                if kind == "error" and first >= base:
                    self._error_starts.add(first)  # a traceback is one error: e/E land on its first line
            else:
                kinds[lo : hi + 1] = kind[lo + base - first : hi + base - first + 1]
            row_lo, row_hi = self._first_row(lo + base), self._first_row(hi + base + 1)  # rows [row_lo, row_hi)
            if row_hi <= row_lo:
                continue  # filtered out
            shown = shown or (row_lo < bottom and row_hi > top)
            if row_lo > cached_hi:
                continue
            # Only those rows re-render, not the whole pane: a cached row in the range is dropped.
            if row_hi - row_lo <= len(self._cache):
                for row in range(row_lo, row_hi):
                    self._cache.discard(row)
            else:
                for row in [r for r in self._cache.keys() if row_lo <= r < row_hi]:  # noqa: SIM118 - not iterable
                    self._cache.discard(row)
        if shown:
            self.refresh()

    def clear(self) -> None:
        self._texts.clear()
        self._kinds.clear()
        self.probes = 0
        self._view = [] if self._view is not None else None
        self._hits = [] if self._hits is not None else None
        self.dropped = 0
        self.cursor = None
        self._cache.clear()
        self._update_size()
        self.refresh()

    def _prune(self) -> bool:
        """Drop the oldest lines past `max_lines`; whether any were dropped."""
        excess = len(self._texts) - self.max_lines
        if excess <= 0:
            return False
        # Drop in chunks of a tenth so the memmove happens rarely, not on every batch.
        excess = max(excess, self.max_lines // 10)
        self.probes -= sum(1 for t in self._texts[:excess] if is_probe(t))
        del self._texts[:excess]
        del self._kinds[:excess]
        self._first_no += excess
        self.dropped += excess
        if self._view is not None:
            del self._view[: bisect_left(self._view, self._first_no)]
        self._hits_prune()
        if self.cursor is not None and self.cursor < self._first_no:
            self.cursor = None
        self._cache.clear()
        return True

    # ---- rows ----------------------------------------------------------------------------------

    @property
    def _marker_rows(self) -> int:
        return 1 if self._first_no > 1 else 0

    @property
    def row_count(self) -> int:
        body = len(self._view) if self._view is not None else len(self._texts)
        return body + self._marker_rows

    def _row_to_no(self, row: int) -> int | None:
        row -= self._marker_rows
        if row < 0:
            return None
        if self._view is not None:
            return self._view[row] if row < len(self._view) else None
        return self._first_no + row if row < len(self._texts) else None

    def _first_row(self, no: int) -> int:
        """The row of line `no`, or of the first line after it that is in the view (row_count past the end)."""
        if self._view is not None:
            return bisect_left(self._view, no) + self._marker_rows
        return min(max(no, self._first_no) - self._first_no, len(self._texts)) + self._marker_rows

    def _bottom_row(self) -> int:
        """One past the last row on screen."""
        return int(self.scroll_offset.y) + max(1, self.scrollable_content_region.height)

    def _no_to_row(self, no: int) -> int | None:
        if self._view is not None:
            i = bisect_left(self._view, no)
            if i < len(self._view) and self._view[i] == no:
                return i + self._marker_rows
            return None
        if self._first_no <= no <= self.last_line_no:
            return no - self._first_no + self._marker_rows
        return None

    def _update_size(self) -> None:
        self.virtual_size = Size(self._width, self.row_count)

    def text_of(self, no: int) -> str | None:
        if self._first_no <= no <= self.last_line_no:
            return self._texts[no - self._first_no]
        return None

    def kind_of(self, no: int) -> str | None:
        if self._first_no <= no <= self.last_line_no:
            return self._kinds[no - self._first_no]
        return None

    # ---- rendering -----------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style once a repaint, not once a row (rich_style walks the ancestors: it was half
        # the cost of repainting the pane).
        self._row_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._row_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        full = self._cache.get(row)
        if full is None:
            full = self._render_row(row)
            if row < self.row_count:  # blank rows past the end change when lines arrive: never cache them
                self._cache[row] = full
        style = self._row_style if self._row_style is not None else self.rich_style
        return full.crop_extend(scroll_x, scroll_x + width, style)

    def _render_row(self, row: int) -> Strip:
        if row < self._marker_rows:
            if self.dropped:
                note = f" … {self.dropped:,} older lines dropped from this view (the log file keeps them) … "
            else:
                note = f" … log shown from line {self._first_no:,} (earlier lines not loaded) … "
            return Strip(Text(note, style=MARKER, no_wrap=True, end="").render(self.app.console))
        no = self._row_to_no(row)
        if no is None:
            if row == self._marker_rows and self._filter is not None and not self._view:
                note = f" 0 matches: no line held matches the filter {self.filter_text} (\\ then enter clears it) "
                return Strip(Text(note, style=MARKER, no_wrap=True, end="").render(self.app.console))
            return Strip([Segment("")])
        return render_row(self.file_line_no(no), self._texts[no - self._first_no], self._kinds[no - self._first_no],
                          self._search, no == self.cursor, self.app.console)

    # ---- the files' own line numbers ---------------------------------------------------------------

    def begin_file(self, first_no: int | None = None) -> None:
        """A new file is followed from view line `first_no` on (default: the next line): the gutter counts
        from 1 again there (a relaunch's log), and the marker lines before it carry no number."""
        self._file_starts.append(self.last_line_no + 1 if first_no is None else first_no)
        self._cache.clear()

    def mark_own(self, no: int) -> None:
        """View line `no` is spectui's own (a relaunch marker), not the file's: no number in the gutter."""
        self._own_lines.add(no)
        self._cache.clear()

    def file_line_no(self, no: int) -> int | None:
        """The number of view line `no` in its own file (None for a line of spectui's own)."""
        if no in self._own_lines:
            return None
        i = bisect_right(self._file_starts, no)
        if i == 0:
            return no
        start = self._file_starts[i - 1]
        return no - start + 1 - sum(1 for o in self._own_lines if start <= o < no)

    def _invalidate(self) -> None:
        self._cache.clear()
        self.refresh()
        self.post_message(self.StateChanged())

    def copy_text(self) -> tuple[str, int]:
        """What `y` copies: the cursor line, else the lines on screen (display text, control chars removed)."""
        if self.cursor is not None and self.text_of(self.cursor) is not None:
            return self.text_of(self.cursor) or "", 1
        top = int(self.scroll_offset.y)
        rows = range(top, min(top + self.scrollable_content_region.height, self.row_count))
        lines = [self.text_of(no) for no in (self._row_to_no(r) for r in rows) if no is not None]
        return "\n".join(t for t in lines if t is not None), len(lines)

    # ---- follow --------------------------------------------------------------------------------

    def watch_following(self, following: bool) -> None:
        # Pause/resume changes no row but the cursor's (dropped on resume): the others stay cached.
        if following:
            self.unseen = 0
            if self.cursor is not None:
                row = self._no_to_row(self.cursor)
                if row is not None:
                    self._cache.discard(row)
            self.cursor = None
            self._stick_to_end()
        self.refresh()
        self.post_message(self.StateChanged())

    def toggle_follow(self) -> None:
        self.following = not self.following

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.following = False

    def action_scroll_up(self) -> None:
        self.following = False
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.following = False
        super().action_page_up()

    def go_top(self) -> None:
        self.following = False
        self.cursor = None  # a later search starts from the top, not from an old hit
        self.scroll_home(animate=False, immediate=True)
        self._invalidate()

    def go_bottom(self) -> None:
        self.following = True

    # ---- filter ----------------------------------------------------------------------------------

    @property
    def filter_text(self) -> str:
        """The filter as the user typed it (the compiled regex may be an escaped literal)."""
        return self._filter_typed if self._filter is not None else ""

    def _passes_view(self, text: str) -> bool:
        """Whether a line is in the view: the filter's, and not a probe line while those are hidden."""
        if not self.show_probes and is_probe(text):
            return False
        return self._filter is None or (self._filter.search(text) is None) == self._filter_inverse

    def _rebuild_view(self) -> None:
        if self._filter is None and (self.show_probes or not self.probes):
            self._view = None
        else:
            first = self._first_no
            self._view = [first + i for i, t in enumerate(self._texts) if self._passes_view(t)]
        self._hits_rebuild()
        self._update_size()

    def filter_count(self) -> int | None:
        """Lines the filter lets through (None without a filter)."""
        return len(self._view or ()) if self._filter is not None else None

    def toggle_probes(self) -> bool:
        """Show or hide spectui's own probe lines; returns whether they are shown now."""
        self.show_probes = not self.show_probes
        self._rebuild_view()
        self._show_cursor_or_end()
        self._invalidate()
        return self.show_probes

    def set_filter(self, pattern: str) -> None:
        """Show only lines matching `pattern` (regex); a leading `!` inverts it; empty clears the filter."""
        self._filter_typed = pattern
        inverse = pattern.startswith("!")
        pattern = pattern[1:] if inverse else pattern
        if not pattern:
            self._filter = None
        else:
            self._filter, self._filter_inverse = compile_pattern(pattern), inverse
        self._rebuild_view()
        self._show_cursor_or_end()
        self._invalidate()

    def _show_cursor_or_end(self) -> None:
        row = self._no_to_row(self.cursor) if self.cursor is not None else None
        if row is None:
            if self.following:
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            return
        height = max(1, self.scrollable_content_region.height)
        self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)
