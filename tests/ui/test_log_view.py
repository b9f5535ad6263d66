"""Log pane through the real app: hostile lines, bounded memory, filter, search, error jumps, follow/pause."""

from __future__ import annotations

import re

from ui_kit import corpus_lines, replay_app, settle

from spectui.ui.widgets.log_view import LogView


def row_text(log: LogView, row: int) -> str:
    """The text a row shows, gutter included (rendered through the widget's own line renderer)."""
    return log._render_row(row).text


async def test_hostile_lines_show_only_their_own_text() -> None:
    hostile = [
        "plain before",
        "\x1b[31mred\x1b[0m \x1b]0;evil title\x07 \x1b[2J cleared?",
        "[bold]not bold[/bold] [link=http://x]not a link[/link] [red]",
        "nul\x00 bell\x07 cr\rback \u202eRTL override\u202c",
        "A" * 1_000_000,
        b"bad utf8 \xff\xfe here".decode("utf-8", errors="replace"),
        "plain after",
    ]
    app = replay_app(hostile)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        texts = [row_text(log, r) for r in range(log.row_count)]
        assert texts[0].endswith("plain before") and texts[-1].endswith("plain after")
        assert texts[1].endswith("red   cleared?")  # escapes removed, not interpreted
        assert "[bold]not bold[/bold] [link=http://x]not a link[/link] [red]" in texts[2]  # markup shown literally
        assert texts[3].endswith("nul bell crback RTL override")
        assert "+998,000 chars not shown" in texts[4] and len(texts[4]) < 2100
        assert texts[5].endswith("bad utf8 \ufffd\ufffd here")
        for r in range(log.row_count):
            for seg in log._render_row(r):
                assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in seg.text)
        # A pattern that looks like markup is shown as typed, and finds the line that holds it.
        await pilot.press("slash", *"[link=", "enter")
        assert "search: [link=" in log._border_title.plain  # what is drawn: the pattern as typed
        assert log.cursor == 3
        # No style leaked from the markup-looking line to the next one.
        assert {s.style for s in log._render_row(6) if "plain" in s.text} == {
            s.style for s in log._render_row(0) if "plain" in s.text}


async def test_bounded_memory_shows_dropped_marker() -> None:
    lines = [f"line {i}" for i in range(1, 1001)]
    app = replay_app(lines, chunk=100, max_log_lines=100)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        assert log.line_count <= 100
        assert log.dropped >= 900
        assert "older lines dropped" in row_text(log, 0)
        assert row_text(log, log.row_count - 1).endswith("line 1000")


async def test_filter_regex_and_inverse() -> None:
    # Real lines: https://github.com/sgl-project/SpecForge/pull/269 (corpus 051)
    lines = corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")
    decode = [ln for ln in lines if "Decode batch" in ln]
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        await pilot.press("backslash")
        await pilot.press(*"decode b")
        await pilot.press("enter")
        assert log.row_count == len(decode)
        assert all("Decode batch" in row_text(log, r) for r in range(log.row_count))
        await pilot.press("backslash", "ctrl+u", *"!decode b", "enter")
        assert log.row_count == len(lines) - len(decode)
        await pilot.press("backslash", "ctrl+u", "enter")
        assert log.row_count == len(lines)


async def test_search_next_previous() -> None:
    # Real lines: https://github.com/sgl-project/SpecForge/pull/269 (corpus 051)
    lines = corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")
    hits = [i + 1 for i, ln in enumerate(lines) if "POST /v1/chat" in ln]
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        await pilot.press("slash", *"POST /v1/chat", "enter")
        assert log.cursor == hits[-1]  # following a live log: the most recent hit first
        assert not log.following
        await pilot.press("N")
        assert log.cursor == hits[-2]
        await pilot.press("n")
        assert log.cursor == hits[-1]
        await pilot.press("n")  # nothing below: stays, says so
        assert log.cursor == hits[-1]
        await pilot.press("y")
        assert app.clipboard == lines[hits[-1] - 1]  # the hit's line, as the log has it
        await pilot.pause()
        # the hit is on screen: the cursor row is inside the visible window
        row = log._no_to_row(hits[-1])
        assert log.scroll_offset.y <= row < log.scroll_offset.y + log.scrollable_content_region.height
        # paused at the top, a new search starts from the top of the view and goes down
        await pilot.press("g", "slash", "ctrl+u", *"POST /v1/chat", "enter")
        assert log.cursor == hits[0]
        await pilot.press("n")
        assert log.cursor == hits[1]


async def test_error_jumps_go_to_each_traceback_start() -> None:
    # Real lines: https://github.com/sgl-project/sglang/pull/21723 (corpus 008) followed by
    # https://github.com/sgl-project/sglang/issues/5491 (corpus 010): two crashes, two error blocks.
    first = corpus_lines("008-nextn-mamba-hybrid-pylogging-crash.log")
    second = corpus_lines("010-eagle-crash-after-requests-v04.log")
    lines = first + second
    starts = [i + 1 for i, ln in enumerate(lines) if "Scheduler hit an exception" in ln]
    assert len(starts) == 2
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        await pilot.press("e")
        assert log.cursor == starts[0]
        assert log.kind_of(starts[0]) == "error"
        await pilot.press("e")
        assert log.cursor == starts[1]
        await pilot.press("E")
        assert log.cursor == starts[0]


async def test_space_pauses_and_resumes_follow() -> None:
    lines = [f"line {i}" for i in range(1, 301)]
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        assert log.following and log.scroll_offset.y == log.max_scroll_y
        await pilot.press("space")
        assert not log.following
        assert "PAUSED" in str(log.border_title)
        log.append_lines(["late 1", "late 2"])
        await pilot.pause()
        assert log.unseen == 2
        assert log.scroll_offset.y < log.max_scroll_y  # did not jump to the new lines
        await pilot.press("space")
        await pilot.pause()
        assert log.following and log.scroll_offset.y == log.max_scroll_y
        await pilot.press("g")
        assert log.scroll_offset.y == 0 and not log.following
        await pilot.press("G")
        await pilot.pause()
        assert log.following


async def test_decode_lines_are_coloured_by_kind() -> None:
    # Real lines: https://github.com/sgl-project/SpecForge/pull/269 (corpus 051)
    lines = corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        kinds = {log.kind_of(i + 1) for i, ln in enumerate(lines) if re.search(r"Decode batch", ln)}
        assert kinds == {"decode"}
        http = [i + 1 for i, ln in enumerate(lines) if "POST /v1" in ln]
        assert log.kind_of(http[0]) == "other"


async def test_a_failing_tail_keeps_the_screen_and_says_why() -> None:
    from spectui.errors import ConnectError
    from spectui.sources.base import TailLines

    async def broken(_path: str):
        yield TailLines(("[2025-11-04 08:41:02] first line",), 1, 0)
        raise ConnectError("gpu1: connection dropped; check the network, spectui retries on reconnect")

    app = replay_app([])
    app.session.tail_factory = broken
    app.session.replay = False
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if app.dashboard.tail_done and not app.dashboard.processing:
                break
        assert app.dashboard.connection == "lost"
        assert app.dashboard.query_one(LogView).line_count == 1
        assert any("connection dropped" in n.message for n in app._notifications)


async def test_a_crash_at_the_end_of_a_live_log_is_shown_when_the_log_goes_quiet() -> None:
    import asyncio
    import time

    from spectui.sources.base import TailLines
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    # Real lines: https://github.com/sgl-project/sglang/pull/21723 (corpus 008): a decode line, then a
    # traceback that is the last thing the server wrote (it died). Nothing follows to close it.
    lines = corpus_lines("008-nextn-mamba-hybrid-pylogging-crash.log")
    start = next(i + 1 for i, ln in enumerate(lines) if "Scheduler hit an exception" in ln)

    async def live(_path: str):
        yield TailLines(tuple(lines), 1, 0)
        await asyncio.sleep(3600)  # the tail stays open: a live log that went quiet

    session = Session(label="gpu1", log_path="server.log", tail_factory=live, probe_gpus=False)
    app = SpectuiApp(session, clock=time.monotonic)
    async with app.run_test(size=(100, 30)) as pilot:
        log = app.dashboard.query_one(LogView)
        for _ in range(60):
            await pilot.pause(0.1)
            if log.kind_of(start) == "error":
                break
        assert log.kind_of(start) == "error"
        assert app.dashboard.last_update.snapshot.phase.value == "crashed"
