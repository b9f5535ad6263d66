"""A hidden tab follows and diagnoses without painting: its lines are held off the pane, parsed in the app's
round, its diagnoses reach the summary strip; shown again, its pane has every line it was sent."""

from __future__ import annotations

from ui_kit import sim_lines, streaming

from spectui.ui.multi.app import TabbedApp, TabSpec
from spectui.ui.multi.background import TabLogView
from spectui.ui.session import Session
from spectui.ui.widgets.summary_strip import SummaryStrip

LINES = sim_lines()


async def wait_for(cond, pilot, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    assert cond()


async def test_a_hidden_tab_holds_its_lines_diagnoses_and_shows_them_all_when_switched_to() -> None:
    sessions = [Session(label=f"s{i}", log_path="x.log", tail_factory=streaming(LINES, 40, 40, 0.05),
                        probe_gpus=False)
                for i in range(2)]
    app = TabbedApp([TabSpec(s.label, s) for s in sessions])
    async with app.run_test(size=(160, 48)) as pilot:
        hidden = app.tabs[1].dashboard
        log = hidden.query_one(TabLogView)
        assert app.active == 0 and app.screen is app.tabs[0].dashboard
        total = 40 * 40
        await wait_for(lambda: log.last_line_no == total and not hidden._pending and not hidden.processing, pilot)
        assert log.held_lines > 0 and log.line_count < total  # parsed, not put on the pane
        assert hidden.last_update is not None and hidden.last_update.diagnoses  # the rules saw its lines
        strip = app.screen.query_one(SummaryStrip)  # it refreshes once a second
        await wait_for(lambda: len(strip.entries) == 2 and strip.entries[1].worst is not None
                       and strip.entries[1].phase != "unknown", pilot)
        first = app.tabs[0].dashboard
        # the shown tab's own stream done too (on a loaded machine it can lag a batch): lines arriving after
        # the switch would rightly be held, since it is hidden then
        await wait_for(lambda: first.query_one(TabLogView).line_count == total and not first._pending, pilot)
        await pilot.press("2")
        await pilot.pause()
        assert app.screen is hidden
        assert log.held_lines == 0 and log.line_count == total and log.text_of(total) == log._texts[-1]
        assert log.kind_of(total) is not None and {log.kind_of(n) for n in range(1, total + 1)} != {"other"}
        shown = app.tabs[0].dashboard.query_one(TabLogView)
        assert shown.line_count == total and shown.held_lines == 0  # the tab shown first never held
