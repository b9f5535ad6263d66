"""The fleet screen's table: a virtual list of rows, so 10,000 instances cost what the 40 on screen do.

Textual's DataTable keeps a copy of every cell, measures every new cell and is rebuilt when the order
changes (worst first moves rows every refresh): at 10,000 instances a refresh held the event loop for
seconds and a key waited behind it. Here a refresh hands over the ordered entries (a list, O(N) pointer
work), the column widths come from the caller, and only the visible rows are turned into cells (the
caller's `cells(entry)`), cached until the next refresh.

API (what the screen and its tests use, DataTable's names): row_count, cursor_row, get_row_at(i),
move_cursor(row=), RowHighlighted / RowSelected messages (cursor_row), set_rows(entries, keys, widths).
Line 0 is the header (it does not scroll); keys: up/down (k/j), pageup/pagedown, home/g, end/G, enter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

_CACHE_ROWS = 512


GAP = "  "  # between columns

class FleetTable(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home,g", "scroll_top", "Top", show=False),
        Binding("end,ctrl+end,G", "scroll_bottom", "Bottom", show=False),
        Binding("enter", "select_cursor", "Open", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"fleet-table--header", "fleet-table--cursor", "fleet-table--even"}
    DEFAULT_CSS = """
    FleetTable { height: 1fr; }
    FleetTable > .fleet-table--header { text-style: bold; background: $panel; }
    FleetTable > .fleet-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground;
                                        text-style: $block-cursor-text-style; }
    FleetTable > .fleet-table--even { background: $surface-lighten-1 10%; }
    """

    class RowHighlighted(Message):
        def __init__(self, table: FleetTable, cursor_row: int) -> None:
            super().__init__()
            self.table, self.cursor_row = table, cursor_row

        @property
        def control(self) -> FleetTable:
            return self.table

    class RowSelected(RowHighlighted):
        pass

    def __init__(self, columns: Sequence[str], cells: Callable[[Any], tuple[Text, ...]], *,
                 right: frozenset[int] = frozenset(), id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = tuple(columns)
        self._cells = cells
        self._right = right  # column indexes justified right (numbers)
        self._entries: Sequence[Any] = ()
        self._keys: Sequence[str] = ()
        self._widths: list[int] = [len(c) for c in self.columns]
        self._cache: dict[int, Strip] = {}
        self.cursor_row = 0

    # ---- data ---------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._entries)

    @property
    def keys(self) -> Sequence[str]:
        return self._keys

    def get_row_at(self, row: int) -> tuple[Text, ...]:
        return self._cells(self._entries[row])

    def set_rows(self, entries: Sequence[Any], keys: Sequence[str], widths: Sequence[int], *,
                 cursor: int | None = None) -> None:
        """New rows (already ordered), their keys and column widths; `cursor`: where the cursor goes (it
        stays on its row number otherwise, clamped)."""
        self._entries, self._keys = entries, keys
        self._widths = [max(len(c), w) for c, w in zip(self.columns, widths, strict=True)]
        self._cache.clear()
        self.virtual_size = Size(sum(self._widths) + len(GAP) * len(self._widths), len(entries) + 1)
        row = self.cursor_row if cursor is None else cursor
        self._set_cursor(max(0, min(row, len(entries) - 1)), announce=True)
        self.refresh()

    # ---- cursor -------------------------------------------------------------------------------

    def move_cursor(self, *, row: int | None = None, column: int | None = None, animate: bool = False,
                    scroll: bool = True) -> None:
        if row is not None and self._entries:
            self._set_cursor(max(0, min(row, len(self._entries) - 1)), announce=True)

    def _set_cursor(self, row: int, *, announce: bool) -> None:
        old, self.cursor_row = self.cursor_row, row
        self._cache.pop(old, None)
        self._cache.pop(row, None)
        self._scroll_to_cursor()
        self.refresh()
        if announce and self._entries:
            self.post_message(self.RowHighlighted(self, row))

    def _page(self) -> int:
        return max(1, self.size.height - 2)

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.size.height - 1)  # line 0 is the header
        top = int(self.scroll_offset.y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True)

    def _move(self, row: int) -> None:
        if self._entries:
            row = max(0, min(row, len(self._entries) - 1))
            if row != self.cursor_row:
                self._set_cursor(row, announce=True)

    def action_cursor_up(self) -> None:
        self._move(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self._move(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self._move(self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self._move(self.cursor_row + self._page())

    def action_scroll_top(self) -> None:
        self._move(0)

    def action_scroll_bottom(self) -> None:
        self._move(len(self._entries) - 1)

    def action_select_cursor(self) -> None:
        if self._entries:
            self.post_message(self.RowSelected(self, self.cursor_row))

    def _on_click(self, event: events.Click) -> None:
        if event.y < 1 or not self._entries:
            return
        row = int(self.scroll_offset.y) + event.y - 1
        if row >= len(self._entries):
            return
        if row == self.cursor_row:
            self.action_select_cursor()  # a click on the highlighted row opens it
        else:
            self._set_cursor(row, announce=True)

    def on_resize(self) -> None:
        self._cache.clear()
        self._scroll_to_cursor()

    # ---- rendering ----------------------------------------------------------------------------

    def _line(self, cells: Sequence[Text], style: Style | None, *, plain: bool = False) -> Strip:
        """One row: cells padded to their column, two spaces apart (as DataTable pads); `plain`: the cells'
        own colours dropped (the cursor row: red on the cursor's blue does not read)."""
        line = Text(no_wrap=True, end="", style=style or "")
        for i, (cell, width) in enumerate(zip(cells, self._widths, strict=False)):
            cell = Text(cell.plain) if plain else cell.copy()
            cell.truncate(width, overflow="ellipsis")
            pad = width - cell.cell_len
            if i in self._right:
                line.append(" " * pad)
                line.append_text(cell)
            else:
                line.append_text(cell)
                line.append(" " * pad)
            line.append(GAP)
        if style:  # as a span under the cells' own (Text.render drops a base style when there are no spans)
            line.stylize_before(style, 0, len(line))
        return Strip(line.render(self.app.console))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("fleet-table--header")
            head = self._line([Text(c) for c in self.columns], style)
            return head.crop_extend(scroll_x, scroll_x + width, style)
        row = int(scroll_y) + y - 1
        if row >= len(self._entries):
            return Strip.blank(width, self.rich_style)
        if row == self.cursor_row:
            style = self.get_component_rich_style("fleet-table--cursor")
        elif row % 2:
            style = self.get_component_rich_style("fleet-table--even")
        else:
            style = None
        full = self._cache.get(row)
        if full is None:
            full = self._line(self._cells(self._entries[row]), style, plain=row == self.cursor_row)
            if len(self._cache) >= _CACHE_ROWS:
                self._cache.clear()
            self._cache[row] = full
        return full.crop_extend(scroll_x, scroll_x + width, style or self.rich_style)
