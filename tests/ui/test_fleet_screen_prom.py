"""The fleet screen against the real Prometheus of tests/fleet (three simulators, one dead target):
`spectui connect --prometheus URL` alone opens on it, worst first; enter opens an instance as a tab through
the same path `connect` uses (a --fleet-map entry naming the simulator's log on this host; without one, the
instance's port picks the server on a host running several)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from spectui.commands.connect import build_session
from spectui.commands.connect import multi as connectmulti
from spectui.ui.multi.app import TabbedApp
from spectui.ui.screens.fleet import FleetScreen
from spectui.ui.widgets.fleet_table import FleetTable

_spec = importlib.util.spec_from_file_location("fleet_fixtures", Path(__file__).parents[1] / "fleet" / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
sys.modules["fleet_fixtures"] = _fixtures  # its dataclasses look their module up
_spec.loader.exec_module(_fixtures)
fleet = _fixtures.fleet  # the module-scoped fixture: Prometheus + simulators, killed in its finalizer

pytestmark = pytest.mark.timeout(120)


async def wait_for(predicate, pilot, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await pilot.pause(0.1)


async def test_connect_prometheus_alone_opens_the_fleet_and_enter_opens_a_tab(fleet, tmp_path) -> None:
    healthy = fleet.sims["healthy"]
    fmap = tmp_path / "fleet.map"
    fmap.write_text(f"# instance  ssh target\n{healthy.instance}  local:{healthy.log}\n")
    args = argparse.Namespace(targets=[], hosts=None, log=None, pid=None, server_port=None, read_only=True,
                              prometheus=fleet.url, selector='job="sglang"', fleet_map=str(fmap),
                              baseline_tps=None, ssh_config=None, identity=None, known_hosts=None,
                              accept_new_host_key=False)
    source = connectmulti.fleet_source(args)
    source.interval = 1.0
    opened = []

    async def opener(target: str, server_port: int | None):
        one = argparse.Namespace(**{**vars(args), "target": target, "server_port": server_port})
        session = await build_session(one, match_log=True)
        opened.append(session)
        from spectui.ui.multi.assemble import tab_specs

        return tab_specs([session])[0]

    app = TabbedApp([], fleet=source, opener=opener)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(lambda: isinstance(app.screen, FleetScreen) and app.screen.snapshot is not None, pilot)
            table = app.screen.query_one(FleetTable)
            rows = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert rows[0] == f"127.0.0.1:{fleet.dead_port}"  # down first
            assert set(rows) == {f"127.0.0.1:{fleet.dead_port}", *(s.instance for s in fleet.sims.values())}
            at = rows.index(healthy.instance)
            accept = float(str(table.get_row_at(at)[3]))
            logged = healthy.accept_lens()[-30:]
            assert min(logged) - 0.05 <= accept <= max(logged) + 0.05
            refreshes = app.screen.refreshes
            await wait_for(lambda: app.screen.refreshes > refreshes, pilot, 10)  # refreshed by its worker
            table.move_cursor(row=at)
            await pilot.press("enter")
            await wait_for(lambda: len(app.tabs) == 1 and app.screen is app.tabs[0].dashboard, pilot)
            dash = app.tabs[0].dashboard
            assert dash.session.pid == healthy.proc.pid  # the right simulator, matched by its log
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            await pilot.press("0")  # and back to the fleet
            await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot)
            # No map entry: a loopback instance of a loopback Prometheus is on this machine (`local`), which
            # runs three simulators; the instance's port picks the one.
            low = fleet.sims["low"]
            await wait_for(lambda: app.screen.snapshot is not None, pilot)
            table = app.screen.query_one(FleetTable)
            rows = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            table.move_cursor(row=rows.index(low.instance))
            await pilot.press("enter")
            await wait_for(lambda: len(app.tabs) == 2 and app.screen is app.tabs[1].dashboard, pilot)
            assert app.tabs[1].session.pid == low.proc.pid
            assert app.tabs[1].label == f"{app.tabs[0].label} ({low.instance})"  # two tabs of one host
            await pilot.press("0")
            await wait_for(lambda: isinstance(app.screen, FleetScreen) and app.screen.snapshot is not None, pilot)
            table = app.screen.query_one(FleetTable)
            table.move_cursor(row=[str(table.get_row_at(i)[0]) for i in range(table.row_count)].index(low.instance))
            await pilot.press("enter")  # the same instance again: its tab, not a third
            await wait_for(lambda: app.screen is app.tabs[1].dashboard, pilot)
            assert len(app.tabs) == 2
    finally:
        for s in opened:
            await s.host.close()
