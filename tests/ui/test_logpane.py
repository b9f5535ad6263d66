"""#24: the log pane's gutter shows each file's own line numbers: after a relaunch the new log counts from
1 again (not on from the old file's last line), and spectui's own marker lines carry no number."""

from __future__ import annotations

from ui_kit import settle

from spectui.sources.base import ConnState, TailLines, TailState
from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session
from spectui.ui.widgets.log_view import LogView

FILES = {
    "/logs/old.log": [f"[2026-12-01 10:00:00] old line {i + 1}" for i in range(830)],
    "/logs/new.log": [f"[2026-12-01 11:00:00] new line {i + 1}" for i in range(136)],
}


def tails(path: str):  # type: ignore[no-untyped-def]
    async def events():  # type: ignore[no-untyped-def]
        yield TailState(ConnState.CONNECTED, "test")
        yield TailLines(tuple(FILES[path]), 1, 0)

    return events()


def gutter(log: LogView, no: int) -> str:
    row = log._no_to_row(no)
    assert row is not None
    return "".join(seg.text for seg in log._render_row(row))[:8].strip()


async def test_a_relaunch_file_counts_its_own_lines() -> None:
    session = Session(label="t", log_path="/logs/old.log", tail_factory=tails, replay=True, probe_gpus=False)
    app = SpectuiApp(session, clock=lambda: 1000.0)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        dash = app.dashboard
        log = dash.query_one(LogView)
        assert log.last_line_no == 830 and gutter(log, 830) == "830"
        dash.finished = False
        await dash.switch_log("/logs/new.log")
        await settle(pilot, app)
        assert log.line_count == 830 + 1 + 136
        marker = 831
        assert "relaunched: now following /logs/new.log" in (log.text_of(marker) or "")
        assert gutter(log, marker) == ""  # spectui's line, not the file's
        assert gutter(log, 832) == "1" and log.text_of(832) == FILES["/logs/new.log"][0]
        last = log.last_line_no
        assert gutter(log, last) == "136" and log.text_of(last) == "[2026-12-01 11:00:00] new line 136"
        assert gutter(log, 830) == "830"  # the old file's lines keep theirs
