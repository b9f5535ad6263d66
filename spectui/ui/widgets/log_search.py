"""The log pane's search and jumps (a mixin of LogView): highlight a pattern, n/N between hits, e/E between
error blocks, and the hit count the title shows ("3/17"). Hits are the lines in view (filter and hidden probe
lines apply) that match; the list is kept as lines arrive and are dropped, never recounted per batch."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from spectui.ui.widgets.log_lines import compile_pattern

if TYPE_CHECKING:
    from textual.scroll_view import ScrollView as _Base
else:
    _Base = object


class LogSearch(_Base):
    """Needs LogView's _texts, _first_no, _view, cursor, following, _error_starts, _passes_view and
    _show_cursor_or_end / _invalidate."""

    _texts: list[str]
    _first_no: int
    _view: list[int] | None
    cursor: int | None
    _error_starts: set[int]
    _search: re.Pattern[str] | None
    _search_typed: str
    _hits: list[int] | None

    if TYPE_CHECKING:
        following: bool
        last_line_no: int

        def _passes_view(self, text: str) -> bool: ...
        def _show_cursor_or_end(self) -> None: ...
        def _invalidate(self) -> None: ...
        def _row_to_no(self, row: int) -> int | None: ...
        @property
        def _marker_rows(self) -> int: ...

    @property
    def search_text(self) -> str:
        """The search as the user typed it."""
        return self._search_typed if self._search is not None else ""

    def search_count(self) -> tuple[int | None, int]:
        """(the cursor's place among the hits, 1-based, or None when it is not on one; how many hits)."""
        hits = self._hits or []
        if self.cursor is None or not hits:
            return None, len(hits)
        i = bisect_left(hits, self.cursor)
        return (i + 1 if i < len(hits) and hits[i] == self.cursor else None), len(hits)

    # ---- the hit list: kept in step with the lines held ---------------------------------------------

    def _hits_rebuild(self) -> None:
        pattern = self._search
        if pattern is None:
            self._hits = None
            return
        first, texts = self._first_no, self._texts
        nos = self._view if self._view is not None else range(first, first + len(texts))
        self._hits = [no for no in nos if pattern.search(texts[no - first]) is not None]

    def _hits_extend(self, start_no: int, new: list[str]) -> None:
        if self._hits is None or self._search is None:
            return
        search, passes = self._search.search, self._passes_view
        self._hits.extend(start_no + i for i, t in enumerate(new) if search(t) is not None and passes(t))

    def _hits_prune(self) -> None:
        if self._hits:
            del self._hits[: bisect_left(self._hits, self._first_no)]

    # ---- search and jumps ---------------------------------------------------------------------------

    def set_search(self, pattern: str) -> bool:
        """Highlight `pattern` and move to a hit; empty clears. Returns whether a hit was found.

        Following a live log, the first hit is the most recent one (then `N` goes back in time);
        paused, it is the first hit from the top of the view down, like less.
        """
        self._search = compile_pattern(pattern) if pattern else None
        self._search_typed = pattern
        self._hits_rebuild()
        self._invalidate()
        if self._search is None:
            return True
        if self.cursor is None and self.following:
            return self.find(backward=True)
        if self.cursor is None:
            top = self._row_to_no(max(int(self.scroll_offset.y), self._marker_rows))
            self.cursor = top - 1 if top is not None else None
            if self.find(backward=False):
                return True
            self.cursor = None
            return False
        return self.find(backward=False)

    def find(self, *, backward: bool) -> bool:
        """Move the cursor to the next (previous) line matching the search. Returns whether one exists."""
        pattern = self._search
        if pattern is None:
            return False
        return self._jump(lambda no: pattern.search(self._texts[no - self._first_no]) is not None, backward)

    def jump_error(self, *, backward: bool) -> bool:
        """Move to the start of the next (previous) error block (a traceback is one block)."""

        return self._jump(self._error_starts.__contains__, backward)

    def _candidates(self, backward: bool) -> Iterable[int]:
        """Line numbers after (before) the cursor in view order, not wrapping."""
        if self._view is not None:
            view = self._view
            if self.cursor is None:
                return reversed(view) if backward else iter(view)
            if backward:
                return reversed(view[: bisect_left(view, self.cursor)])
            return iter(view[bisect_right(view, self.cursor):])
        first, last = self._first_no, self.last_line_no
        if self.cursor is None:
            return range(last, first - 1, -1) if backward else range(first, last + 1)
        if backward:
            return range(min(self.cursor - 1, last), first - 1, -1)
        return range(max(self.cursor + 1, first), last + 1)

    def _jump(self, predicate: Callable[[int], bool], backward: bool) -> bool:
        for no in self._candidates(backward):
            if predicate(no):
                self.following = False
                self.cursor = no
                self._show_cursor_or_end()
                self._invalidate()
                return True
        return False
