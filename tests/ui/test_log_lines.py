"""The cockpit's cheap paths show what the slow ones did: the log pane's line preparation, kinds and rows,
the sparkline, the timeline's running step, the diagnoses list and the probe's process state."""

from __future__ import annotations

import asyncio
import os
import random

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from spectui.core.text import terminal_safe
from spectui.sources.liveness import process_state
from spectui.sources.local import LocalHost
from spectui.ui.widgets.log_lines import _GUTTER, KIND_STYLES, batch_kinds, prepare_lines, render_row
from spectui.ui.widgets.sparkline import sparkline
from spectui.ui.widgets.timeline import running_duration


def test_prepare_lines_fast_path_is_the_sanitiser() -> None:
    lines = ["[2026-11-30 15:16:37] Decode batch, #running-req: 3", "", " ", "tab\there", "\x1b[31mred\x1b[0m",
             "wide 日本語", "nul\x00", "A" * 5000, "B" * 2000, "del\x7f", "\u202eRTL"]
    texts, width = prepare_lines(lines)
    assert texts == [terminal_safe(line) for line in lines]
    assert width == max(Text(t).cell_len for t in texts)


def _apply(ranges, base: int, kinds: list[str]) -> tuple[list[str], set[int]]:
    """What LogView.mark_kinds does to the held lines (base = number of kinds[0]) and the error starts."""
    kinds, starts = list(kinds), set()
    for first, last, kind in ranges:
        lo, hi = max(first, base) - base, min(last, base + len(kinds) - 1) - base
        if hi < lo:
            continue
        if isinstance(kind, str):
            kinds[lo : hi + 1] = [kind] * (hi - lo + 1)
            if kind == "error" and first >= base:
                starts.add(first)
        else:
            kinds[lo : hi + 1] = kind[lo + base - first : hi + base - first + 1]
    return kinds, starts


def test_batch_kinds_marks_exactly_what_the_ranges_in_order_do() -> None:
    rng = random.Random(7)
    names = ["decode", "prefill", "other", "error", "warning", "milestone"]
    for _ in range(5000):
        base, older = rng.randint(1, 5), rng.randint(0, 20)
        count = rng.randint(0, 30)
        first_no = base + older
        held = [rng.choice(names) for _ in range(older)] + ["other"] * count
        ranges = []
        for _ in range(rng.randint(0, 15)):
            a = rng.randint(base - 3, first_no + count + 2)
            ranges.append((a, a + rng.choice([0, 0, 0, 1, 4]), rng.choice(names)))
        assert _apply(batch_kinds(ranges, first_no, count), base, held) == _apply(ranges, base, held), ranges
    # the usual batch: one list for its lines, error blocks after it
    out = batch_kinds([(10, 10, "decode"), (12, 14, "error"), (15, 15, "prefill")], 10, 6)
    assert out == [(10, 15, ["decode", "other", "other", "other", "other", "prefill"]), (12, 14, "error")]


def test_plain_rows_are_what_rich_text_renders() -> None:
    console = Console(width=160)
    for kind in [*KIND_STYLES, "unknown"]:
        for no, line in enumerate(["", " ", "Decode batch, accept len: 1.79", "日本語 wide", "x" * 3000]):
            text = Text(no_wrap=True, end="")
            text.append(f"{no:>7} ", _GUTTER)
            text.append_text(Text(line, style=KIND_STYLES.get(kind, Style()), no_wrap=True, end=""))
            want = Strip(text.render(console))
            got = render_row(no, line, kind, None, False, console)
            assert list(got) == list(want) and got.cell_length == want.cell_length


def _cells(text: Text) -> list[tuple[str, str]]:
    console = Console()
    return [(ch, str(text.get_style_at_offset(console, i))) for i, ch in enumerate(text.plain)]


def test_sparkline_shows_the_newest_cells_with_boundaries_and_gaps() -> None:
    t = sparkline([(1.0, 2.0), (None, 3.0)], 10, style="green", low=1.0)
    assert t.plain == "▁▅│ █"
    assert _cells(t) == [("▁", "green"), ("▅", "green"), ("│", "bold magenta"), (" ", "none"), ("█", "green")]
    long = [tuple(float(i % 7) for i in range(5000)), tuple(float(i % 5) for i in range(3000))]
    t = sparkline(long, 40, low=0.0)
    assert t.plain == "▁▃▅▆█" * 8  # only the newest launch fits: its last 40 points
    t = sparkline([(), (1.0,), (), (2.0, 2.0)], 10)
    assert t.plain == "▁││██"  # a boundary before each launch after the first one that has points
    assert sparkline([(None,)], 5).plain == "" and sparkline([(1.0,)], 0).plain == ""


def test_running_step_moves_in_5s_then_minutes() -> None:
    assert [running_duration(s) for s in (0.4, 4.9, 5.0, 59.9, 60.0, 3599.0, 3700.0)] == [
        "0s", "0s", "5s", "55s", "1m", "59m", "1h01m"]


def test_process_state_of_a_local_process_is_read_without_a_command() -> None:
    class NoCommands(LocalHost):
        async def run(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
            raise AssertionError(f"ran {argv}")

    host = NoCommands()
    assert asyncio.run(process_state(host, os.getpid())) in ("R", "S")
    assert asyncio.run(process_state(host, 2**22 + 12345)) is None  # above pid_max: no such process
