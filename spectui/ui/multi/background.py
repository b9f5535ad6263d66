"""What a hidden tab does instead of what the shown one does: hold its log lines, parse in turn, once a second.

perf/perf_tabs.py (ten tabs at 500 lines/s each, 2 cores): parsing is GIL-bound Python (the rule engine's
depth advice per launch segment dominates), so ten tabs each parsing five times a second in their own
thread left the event loop waiting for the GIL on every hop of a key's handling; one parse thread for all
hidden tabs still did (keys 1.6-2.6x slower than with one tab). Here:

- `TabLogView` holds a hidden tab's batches (display text and kinds, already prepared in the worker)
  and adds them to the pane in one go when the tab is shown; nothing is laid out or scrolled meanwhile.
  At most `max_lines` lines are held (past that they are added, as the pane would drop them anyway).
- `BackgroundParse` hands hidden tabs' waiting lines to the parser once a second, one tab at a time (one
  batch in flight for all hidden tabs). The batch is parsed on the event loop in slices of a few ms, each
  when the loop has nothing else to do (`slicer.Slicer`), not in a thread: only the shown tab's parse
  thread competes with the event loop for the GIL, as with one server. Diagnoses, accept length, tok/s
  and phase of a hidden tab still reach the summary strip within about two seconds.
- At its first round (every tab composed) it moves the objects made so far out of the garbage collector's
  generations (`gc.freeze`): ten tabs' rules, widgets and catalogues made each full collection walk a
  heap ~1.4x larger, and full collections (every few seconds under ten busy logs) stalled the event loop
  up to ~350 ms (together ~1.3 s in a 12 s run; ~0.4 s frozen). The first tab taken apart (exit) unfreezes
  them, so what the app leaves behind is collected as usual.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterable
from typing import Any

from spectui.ui.multi.slicer import Slicer
from spectui.ui.widgets.log_view import LogView

HIDDEN_FLUSH_INTERVAL = 1.0  # seconds: a hidden tab's waiting lines are parsed this often (the shown: 0.2)


class TabLogView(LogView):
    """A LogView that holds batches while its tab is hidden (`hidden` is a callable the tab sets)."""

    def __init__(self, *, max_lines: int = 50_000, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines, id=id)
        self.hidden: Any = lambda: False
        self._held: list[tuple[Any, int | None, tuple[tuple[int, int, str], ...] | None]] = []
        self._held_lines = 0
        self._held_last: int | None = None  # last_line_no once the held lines are added

    @property
    def last_line_no(self) -> int:  # held lines count: a hidden tab's log is followed, just not painted
        return self._held_last if self._held_last is not None else self._first_no + len(self._texts) - 1

    @property
    def held_lines(self) -> int:
        return self._held_lines

    def append_prepared(self, prepared: tuple[list[str], int], first_line: int | None = None) -> None:
        if not self.hidden():
            self.release()
            super().append_prepared(prepared, first_line)
            return
        new = prepared[0]
        if first_line is not None and not self._texts and self.dropped == 0 and self._held_last is None:
            start = max(1, first_line)  # what the pane would number them (a tail starting mid-file)
        else:
            start = self.last_line_no + 1
        self._held.append((prepared, first_line, None))
        if new:
            self._held_last = start + len(new) - 1
            self._held_lines += len(new)
        if self._held_lines > self.max_lines:
            self.release()  # bounded: the pane keeps max_lines and drops the rest in its own way

    def mark_kinds(self, ranges: Iterable[tuple[int, int, str]]) -> None:
        if not self.hidden() and not self._held:
            super().mark_kinds(ranges)
            return
        self._held.append((None, None, tuple(ranges)))

    def release(self) -> None:
        """Add the held lines in one append, then their kinds in order: one layout, one repaint."""
        if not self._held:
            return
        held, self._held, self._held_lines, self._held_last = self._held, [], 0, None
        first = next((f for p, f, _ in held if p is not None), None)
        texts: list[str] = []
        width = 0
        for prepared, _, _ in held:
            if prepared is not None:
                texts.extend(prepared[0])
                width = max(width, prepared[1])
        super().append_prepared((texts, width), first)
        kinds = [r for _, _, ranges in held if ranges for r in ranges]
        if kinds:
            super().mark_kinds(kinds)


class BackgroundParse:
    """One queue for every hidden tab's waiting lines: a round a second, one batch in flight at a time."""

    def __init__(self, slicer: Slicer | None = None) -> None:
        self._queue: deque[Any] = deque()
        self._busy: Any = None  # the hidden dashboard whose batch is in flight
        self.slicer = slicer or Slicer()
        self.frozen: bool | None = None  # None: not yet; True: start-up objects frozen; False: unfrozen since

    async def analyse(self, dash: Any, batch: list[str], first_view_no: int | None = None,
                      ) -> tuple[tuple[list[str], int], Any]:
        """A hidden tab's batch through its pipeline, in slices on the event loop (the rest in a thread if
        the tab is shown meanwhile): what DashboardScreen._analyse returns for it."""
        return await self.slicer.analyse(dash.cockpit, batch, dash.clock(), first_no=first_view_no,
                                         shown=lambda: not dash._hidden())

    def want(self, dash: Any, *, urgent: bool = False) -> None:
        """A hidden tab has lines waiting: flushed at the next round (at once when shown, or a full batch)."""
        dash._bg_wanted = True
        if urgent and dash not in self._queue and dash is not self._busy:
            self._queue.append(dash)
            self._next()

    def round(self, dashboards: Iterable[Any]) -> None:
        if self.frozen is None:
            self.frozen = True
            gc.freeze()  # the start-up heap (every tab composed): long-lived, out of every full collection
        for dash in dashboards:
            if getattr(dash, "_bg_wanted", False) and dash not in self._queue and dash is not self._busy:
                self._queue.append(dash)
        self._next()

    def done(self, dash: Any) -> None:
        if dash is self._busy:
            self._busy = None
            self._next()

    def unfreeze(self) -> None:
        """A tab is taken apart (the app exits): the frozen objects are collectable again."""
        if self.frozen:
            self.frozen = False
            gc.unfreeze()

    def forget(self, dash: Any) -> None:
        """The tab was shown (it flushes itself now) or closed."""
        if dash in self._queue:
            self._queue.remove(dash)

    def _next(self) -> None:
        while self._busy is None and self._queue:
            dash = self._queue.popleft()
            dash._bg_wanted = False
            if not dash.is_attached or not dash._hidden() or dash.processing or not dash._pending:
                continue
            self._busy = dash
            dash.flush()
            if not dash.processing:  # nothing was handed to the parser after all
                self._busy = None
