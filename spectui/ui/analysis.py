"""One batch of log lines through the cockpit: the display text and the pipeline's update, in the form the
log pane applies in a few steps. Run in a worker thread by the shown tab (screens/dashboard.py) and in
slices by hidden tabs (multi/slicer.py)."""

from __future__ import annotations

from typing import Any

from spectui.ui.controller import Cockpit, CockpitUpdate
from spectui.ui.widgets.log_lines import batch_kinds
from spectui.ui.widgets.log_view import prepare_lines

PARSE_SLICE = 500  # lines per parser call in the worker thread


def analyse_batch(cockpit: Cockpit, batch: list[str], now: float, first_view_no: int | None = None,
                  ) -> tuple[tuple[list[str], int], CockpitUpdate | None]:
    """The batch's display text, and the pipeline's update for it (None for no lines), fed PARSE_SLICE
    lines a call; `first_view_no`: the pane's number of its first line."""
    import dataclasses

    prepared = prepare_lines(batch)
    kinds: list[tuple[int, int, str]] = []
    fresh: list[Any] = []
    update = None
    first = None if first_view_no is None else first_view_no - cockpit.offset  # the stream's own number
    for i in range(0, len(batch), PARSE_SLICE):
        update = cockpit.feed(batch[i : i + PARSE_SLICE], now, None if first is None else first + i)
        kinds.extend(update.kinds)
        fresh.extend(update.new_diagnoses)
    if update is not None:
        # the batch's kinds as one list (batch_kinds): mark_kinds then does no per-line step
        marks = kinds if first_view_no is None else batch_kinds(kinds, first_view_no, len(batch))
        update = dataclasses.replace(update, kinds=tuple(marks), new_diagnoses=tuple(fresh))
    return prepared, update
