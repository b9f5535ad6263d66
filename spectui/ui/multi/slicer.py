"""A hidden tab's batch parsed on the event loop, a few milliseconds at a time, when the loop is otherwise idle.

perf/perf_tabs.py (ten tabs at 500 lines/s each, 2 cores): the pipeline costs ~70-150 µs a line, so nine
hidden tabs need about half a core of GIL-bound Python. In a worker thread that half core took the GIL from
the event loop on every hop of a key's handling (each wait up to a GIL switch interval, 5 ms), and keys were
1.6-2.6x slower than with one tab. Here the hidden batches run on the event loop itself, in slices:

- a slice runs only when nothing else is ready on the loop (a key, a message, a due timer run first), or
  once it has waited `max_defer` (so hidden tabs keep up however busy the shown one is);
- a slice feeds chunks of lines until its `budget` is spent: a chunk is sized from the measured cost per
  line and is started only when it fits in what is left of the slice (the first chunk of a slice always
  runs, so a batch always progresses). One line can still cost more than a budget (a `server_args=` line
  is ~15 ms to parse); nothing smaller than a line can be cut.
- every line is fed exactly once and in order; the lines' display text and the pipeline's updates are
  merged as the shown tab's single parse would return them.

A tab shown while its batch is half done gets the rest parsed in a thread, as the shown tab always is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from spectui.ui.analysis import analyse_batch

SLICE_BUDGET = 0.006  # seconds of parsing per slice: about the longest a key waits for a hidden tab
MAX_DEFER = 0.010  # seconds a slice waits for an idle loop before it runs anyway (hidden tabs keep up)
STEP_SHARE = 0.75  # a chunk is sized to this share of a budget
MIN_STEP, MAX_STEP = 4, 250  # lines per chunk (a chunk is one pipeline call: each call costs ~1 ms fixed)
START_COST = 100e-6  # seconds a line, before anything was measured


class Slicer:
    """Runs batches through a Cockpit in time-boxed slices on the event loop (one Slicer for all hidden tabs)."""

    def __init__(self, *, budget: float = SLICE_BUDGET, max_defer: float = MAX_DEFER,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.budget = budget
        self.max_defer = max_defer
        self.clock = clock
        self.per_line = START_COST  # running estimate of one line's cost (prepare + pipeline)
        self.slices = 0  # counters, for tests and perf/perf_tabs.py
        self.longest = 0.0  # the longest slice so far (seconds)
        self.over = 0  # slices that took more than twice the budget (a dear line, a collection, no CPU)
        self.on_slice: Callable[[int, float], None] | None = None  # (lines, seconds) after each slice

    def step(self) -> int:
        """Lines in the next chunk: about STEP_SHARE of a budget's worth (few calls: each has a fixed cost)."""
        return max(MIN_STEP, min(MAX_STEP, int(self.budget * STEP_SHARE / max(self.per_line, 1e-7))))

    async def turn(self) -> None:
        """Until the loop has nothing else ready (or `max_defer` has passed): a hidden tab never goes first."""
        loop = asyncio.get_running_loop()
        began = self.clock()
        await asyncio.sleep(0)
        while getattr(loop, "_ready", None) and self.clock() - began < self.max_defer:
            await asyncio.sleep(0)

    async def analyse(self, cockpit: Any, batch: Sequence[str], now: float, *, first_no: int | None = None,
                      shown: Callable[[], bool] = lambda: False) -> tuple[tuple[list[str], int], Any]:
        """(display text, widest cell width) of `batch` and the merged CockpitUpdate (None for no lines).
        `first_no`: the pane's number of the batch's first line (each chunk's kinds are then made into one
        list for it, log_lines.batch_kinds, as the shown tab's parse worker does)."""
        out = _Merged()
        i, n = 0, len(batch)
        while i < n:
            await self.turn()
            if shown():  # shown meanwhile: the rest as the shown tab parses, in a thread, at once
                start = None if first_no is None else first_no + i
                out.add(*await asyncio.to_thread(analyse_batch, cockpit, list(batch[i:]), now, start))
                break
            began = self.clock()
            spent, fed = 0.0, 0
            while i < n:
                k = self.step()
                if fed and spent + k * self.per_line > self.budget:
                    break  # the next chunk would overrun this slice: the loop gets a turn first
                chunk = list(batch[i : i + k])
                t0 = self.clock()
                out.add(*analyse_batch(cockpit, chunk, now, None if first_no is None else first_no + i))
                cost = self.clock() - t0
                # dearer: believed at once (the next chunk must fit), but an outlier (a server_args= line,
                # a collection) at most triples it; cheaper: believed slowly
                sample = min(cost / len(chunk), 3 * self.per_line)
                self.per_line = sample if sample > self.per_line else 0.8 * self.per_line + 0.2 * sample
                i += len(chunk)
                fed += len(chunk)
                spent = self.clock() - began
            self.slices += 1
            self.longest = max(self.longest, spent)
            self.over += spent > 2 * self.budget
            if self.on_slice is not None:
                self.on_slice(fed, spent)
        return out.result()


class _Merged:
    """Chunks' results as one: texts in order, the widest width, every chunk's kinds and new diagnoses."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.width = 0
        self.kinds: list[Any] = []  # (first, last, kind or one kind per line)
        self.fresh: list[Any] = []
        self.update: Any = None

    def add(self, prepared: tuple[list[str], int], update: Any) -> None:
        self.texts.extend(prepared[0])
        self.width = max(self.width, prepared[1])
        if update is not None:
            self.kinds.extend(update.kinds)
            self.fresh.extend(update.new_diagnoses)
            self.update = update

    def result(self) -> tuple[tuple[list[str], int], Any]:
        update = self.update
        if update is not None:
            update = dataclasses.replace(update, kinds=tuple(self.kinds), new_diagnoses=tuple(self.fresh))
        return (self.texts, self.width), update
