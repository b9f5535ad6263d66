"""A relaunch from the cockpit records what it reached: once the cockpit follows the new log and its own
pipeline has read the new launch's first decode window, the launch history's record gets the accept length
and gen tok/s (HistoryStore.update), and the history screen shows them instead of "–". Pilot against a real
simulator."""

from __future__ import annotations

from test_relaunch_sim import start_demo_session, stop_relaunched, wait_for
from textual.widgets import DataTable, Input

from spectui.ops.history import read_history
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.history import HistoryScreen
from spectui.ui.screens.relaunch import RelaunchScreen


async def test_a_cockpit_relaunch_records_the_accept_len_and_tok_s_it_reached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    demo, _path, session = start_demo_session("healthy", tmp_path)
    app = SpectuiApp(session)
    new_pid = None
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.dashboard
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RelaunchScreen)
            steps = screen.query_one("#f-speculative_num_steps", Input)
            steps.value = "3"
            await pilot.pause()
            assert screen.evaluation.launchable
            await pilot.press("ctrl+s", "ctrl+s")
            await wait_for(lambda: session.current_pid != demo.proc.pid, pilot, timeout=120)
            # The cockpit may follow the new pid (successor) a moment before the relaunch records it healthy.
            await wait_for(lambda: read_history()[0].outcome != "running", pilot, timeout=120)
            new_pid = session.current_pid
            (rec,) = read_history()
            assert rec.outcome == "healthy" and rec.new_pid == new_pid
            # Recorded from the cockpit's pipeline once the new launch's first window is read.
            await wait_for(lambda: read_history()[0].accept_len is not None, pilot, timeout=90)
            (rec,) = read_history()
            assert dash.log_path == rec.log  # recorded from the new launch's own log
            assert 1.0 <= rec.accept_len <= 4.0  # at most steps + 1
            assert rec.gen_tokens_per_s is not None and rec.gen_tokens_per_s > 0
            await pilot.press("h")
            await pilot.pause()
            assert isinstance(app.screen, HistoryScreen)
            recorded = app.screen.query_one("#recorded", DataTable)
            await wait_for(lambda: recorded.row_count == 1 and str(recorded.get_row_at(0)[1]) == "healthy",
                           pilot, timeout=10)
            row = recorded.get_row_at(0)
            assert str(row[2]) == f"{rec.accept_len:.2f}" and str(row[3]) == f"{rec.gen_tokens_per_s:.1f}"
            await pilot.press("escape", "q")
    finally:
        demo.stop_sim()
        stop_relaunched(new_pid)
