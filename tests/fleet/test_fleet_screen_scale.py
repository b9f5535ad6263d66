"""The fleet screen with 10,000 instances (#29): only the rows on screen are built, keys move the cursor
through all of them, `o` re-orders, and the cursor stays on its instance across orders and refreshes.
(Timings are perf/perf_fleet.py's business; this checks the work done, which is what made it slow.)"""

from __future__ import annotations

import asyncio
import random

import pytest
from textual.app import App

from spectui.fleet import FleetEntry, FleetSnapshot, InstanceMetrics, diagnose
from spectui.fleet.diagnose import rank_key
from spectui.ui.screens import fleet as fleet_screen
from spectui.ui.screens.fleet import FleetScreen, FleetSource
from spectui.ui.widgets.fleet_table import FleetTable

pytestmark = pytest.mark.timeout(120)
N = 10_000


def make_snapshot(seed: int) -> FleetSnapshot:
    rnd = random.Random(seed)
    entries = []
    for i in range(N):
        spec = i % 3 != 0
        m = InstanceMetrics(job="sglang", instance=f"10.0.{i // 256}.{i % 256}:30000", up=i % 500 != 7,
                            accept_len=round(1 + 3 * rnd.random(), 3) if spec else None, steps=3 if spec else None,
                            gen_tokens_per_s=round(rnd.random() * 2000, 1), running=rnd.randint(0, 40), queued=0,
                            metric_names=frozenset({"sglang:num_running_reqs"}))
        if m.up is False:
            m.accept_len = m.gen_tokens_per_s = m.running = None
        entries.append(FleetEntry(m, diagnose(m)))
    entries.sort(key=lambda e: rank_key(e.metrics, e.diagnoses))
    return FleetSnapshot("http://prom:9090", "", entries, taken_at=1000.0 + seed)


async def settle(app: App, pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause()
    painted = asyncio.Event()
    app.call_after_refresh(painted.set)
    await painted.wait()


async def test_ten_thousand_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real_cells = fleet_screen.row_cells

    def counting_cells(entry):  # type: ignore[no-untyped-def]
        built.append(entry.metrics.instance)
        return real_cells(entry)

    monkeypatch.setattr(fleet_screen, "row_cells", counting_cells)
    first, second = make_snapshot(1), make_snapshot(2)

    async def no_open(_target: str, _instance: str) -> None:
        return None

    screen = FleetScreen(FleetSource(lambda: first, interval=3600, url="http://prom:9090"), no_open, closable=False)

    class Bench(App[None]):
        def on_mount(self) -> None:
            self.push_screen(screen)

    app = Bench()
    async with app.run_test(size=(160, 48)) as pilot:
        table = screen.query_one(FleetTable)
        for _ in range(400):
            if table.row_count == N:
                break
            await pilot.pause(0.05)
        await settle(app, pilot)
        assert table.row_count == N
        assert table.get_row_at(0)[2].plain == "DOWN"  # worst first: the down instances lead
        assert 0 < len(built) <= 3 * 48, len(built)  # the rows on screen, not 10,000
        status = str(screen.query_one("#fleet-status").render())
        assert f"{N:,} instances" in status and "worst first" in status

        for _ in range(3):
            await pilot.press("down")
        await pilot.press("pagedown")
        await settle(app, pilot)
        at = table.cursor_row
        assert at > 3 + 10  # a page is most of the screen's 40-odd rows
        chosen = table.keys[at]
        assert chosen.split("/", 1)[1] in str(screen.query_one("#fleet-detail").render())

        # `o`: accept len, lowest first (None last), the cursor still on the chosen instance
        await pilot.press("o")
        await settle(app, pilot)
        assert "accept len, lowest first" in str(screen.query_one("#fleet-status").render())
        expected = sorted(first.entries, key=lambda e: (e.metrics.accept_len is None, e.metrics.accept_len or 0.0))
        assert [table.get_row_at(i)[0].plain for i in (0, 1, N - 1)] == [
            expected[i].metrics.instance for i in (0, 1, N - 1)]
        assert table.keys[table.cursor_row] == chosen
        # a refresh in which every value (so the order) changed: the cursor follows the instance again
        screen.show(second)
        await settle(app, pilot)
        expected = sorted(second.entries, key=lambda e: (e.metrics.accept_len is None, e.metrics.accept_len or 0.0))
        assert table.get_row_at(0)[0].plain == expected[0].metrics.instance
        assert table.keys[table.cursor_row] == chosen

        built.clear()
        await pilot.press("end")
        await settle(app, pilot)
        assert table.cursor_row == N - 1 and table.scroll_offset.y > N - 60
        assert expected[-1].metrics.instance in built  # the last rows were drawn, a screenful of them
        assert len(built) <= 3 * 48
        for _ in range(len(fleet_screen.ORDERS) - 1):  # on through the orders, back to worst first
            await pilot.press("o")
        await pilot.press("home")
        await settle(app, pilot)
        assert "worst first" in str(screen.query_one("#fleet-status").render())
        assert table.cursor_row == 0 and table.get_row_at(0)[0].plain == second.entries[0].metrics.instance
