"""#24: search shows where the cursor is among the hits ("3/17"), and a filter matching nothing says
"0 matches" (title and pane) instead of a blank pane."""

from __future__ import annotations

from ui_kit import replay_app, settle

from spectui.ui.widgets.log_view import LogView


def lines_with(n_hits: int, total: int) -> list[str]:
    every = total // n_hits
    return [f"[2026-12-01 10:00:00] line {i} " + ("needle" if i % every == 0 and i // every < n_hits else "hay")
            for i in range(total)]


async def _type(pilot, text: str) -> None:
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")
    await pilot.pause()


async def test_search_title_counts_hits_and_the_cursor_place() -> None:
    lines = lines_with(17, 170)
    app = replay_app(lines)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        await pilot.press("space")  # paused: the first hit is the first from the top, like less
        await pilot.press("g")
        await pilot.press("slash")
        await _type(pilot, "needle")
        assert "search: needle 1/17" in str(log.border_title)
        await pilot.press("n")
        await pilot.press("n")
        await pilot.pause()
        assert "search: needle 3/17" in str(log.border_title)
        await pilot.press("N")
        await pilot.pause()
        assert "search: needle 2/17" in str(log.border_title)
        # a filter narrows the hits to the lines in view
        log.set_filter("line 1")  # lines 1, 10-19, 100-169: hits 10, 100, 110, … 160
        await pilot.pause()
        expected = sum(1 for t in lines if "needle" in t and "line 1" in t)
        title = str(log.border_title)
        assert log.search_count()[1] == expected
        assert f"/{expected}" in title or f"({expected} hits)" in title


async def test_hits_follow_lines_that_arrive_and_are_dropped() -> None:
    app = replay_app(lines_with(5, 50), max_log_lines=100)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        log.set_search("needle")
        assert log.search_count()[1] == 5
        log.append_lines(["needle late 1", "hay", "needle late 2"])
        assert log.search_count()[1] == 7
        log.append_lines([f"hay {i}" for i in range(100)])  # the oldest lines (and their hits) are dropped
        assert log.search_count()[1] == sum(
            1 for no in range(log._first_no, log.last_line_no + 1) if "needle" in (log.text_of(no) or ""))


async def test_a_filter_matching_nothing_says_0_matches() -> None:
    app = replay_app(lines_with(3, 30))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        await pilot.press("backslash")
        await _type(pilot, "nosuchword")
        assert "filter: nosuchword (0 matches)" in str(log.border_title)
        first = "".join(seg.text for seg in log._render_row(0))
        assert "0 matches" in first and "nosuchword" in first
        await pilot.press("backslash")
        await _type(pilot, "needle")
        assert "filter: needle (3 lines)" in str(log.border_title)
        assert "0 matches" not in "".join(seg.text for seg in log._render_row(0))


async def test_the_first_probe_line_does_not_count_a_hit_twice() -> None:
    """The first probe line switches the pane to a view without them (hits recounted once, not twice)."""
    app = replay_app(lines_with(5, 50))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        log.set_search("needle")
        assert log.search_count()[1] == 5 and log.probes == 0
        log.append_lines(["needle after", 'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK', "needle again"])
        assert log.probes == 1 and log.search_count()[1] == 7
        assert log._hits == sorted(set(log._hits))
