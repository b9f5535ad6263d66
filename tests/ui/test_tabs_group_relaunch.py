"""A two-node server's group tab relaunched from the cockpit (`r`, edit, confirm twice): both simulated nodes
are stopped and started again with the edit, the tab follows the new launch (node 0's new log, node 1's
errors), and the history holds one record per node under one group id. Pilot against real simulators
(`--nnodes 2`: node rank 0 hosts the rendezvous node rank 1 joins)."""

from __future__ import annotations

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, alive, free_port, proc_argv, wait_health  # noqa: E402
from test_tabs_sim import connect_args, wait_for
from textual.widgets import DataTable, Input

from spectui.commands.connect import build_session  # noqa: E402
from spectui.commands.connect import multi as connectmulti  # noqa: E402
from spectui.ops.history import read_history  # noqa: E402
from spectui.ui.multi.app import TabbedApp  # noqa: E402
from spectui.ui.multi.assemble import tab_specs  # noqa: E402
from spectui.ui.screens.history import HistoryScreen  # noqa: E402
from spectui.ui.screens.relaunch import RelaunchScreen  # noqa: E402

pytestmark = pytest.mark.timeout(240)
EAGLE = ["--model-path", "/models/llama-8b", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]


async def test_the_group_tab_relaunches_both_nodes_and_follows_the_new_launch(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    dist = free_port()
    labs = []
    for rank in (1, 0):  # any order: rank 1 waits for rank 0's store
        (tmp_path / f"node{rank}").mkdir()
        lab = SimLab(tmp_path / f"node{rank}", free_port())
        lab.start([*EAGLE, "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr",
                   f"127.0.0.1:{dist}"], log=f"node{rank}.log", env=SIM_FAST_ENV)
        labs.append(lab)
    labs.reverse()
    sessions = []
    try:
        for lab in labs:
            wait_health(lab.port, 60)
        targets = [f"local:{lab.root / f'node{r}.log'}" for r, lab in enumerate(labs)]
        sessions = await connectmulti.sessions_for(connect_args(*targets, read_only=False), targets, build_session)
        old = [s.pid for s in sessions]
        old_argv = [proc_argv(p) for p in old]
        (spec,) = tab_specs(sessions)
        assert spec.refusal is None and spec.session.group is not None
        app = TabbedApp([spec])
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.tabs[0].dashboard
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            old_log = dash.log_path
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RelaunchScreen)
            note = str(screen.query_one("#group-note").render())
            assert "2 nodes" in note and "every node" in note and str(old[1]) in note
            screen.query_one("#f-speculative_num_steps", Input).value = "5"
            await pilot.pause()
            assert screen.evaluation.launchable
            await pilot.press("ctrl+s", "ctrl+s")
            await wait_for(lambda: len(read_history()) == 2 and all(h.outcome != "running" for h in read_history()),
                           pilot, 150)
            hist = read_history()
            assert {h.outcome for h in hist} == {"healthy"}, [h.error for h in hist]
            assert len({h.group for h in hist}) == 1
            new = {h.node: h.new_pid for h in hist}
            for rank, s in enumerate(sessions):
                pid = new[f"node {rank}/2"]
                assert not alive(old[rank]) and alive(pid)
                argv = list(old_argv[rank])
                argv[argv.index("--speculative-num-steps") + 1] = "5"
                assert proc_argv(pid) == argv
                assert s.current_pid == pid and s.log_path != targets[rank][len("local:"):]  # follows the new log
            # the tab follows node 0's new log (its decode lines) and shows them
            await wait_for(lambda: dash.log_path not in (None, old_log), pilot, 30)
            assert dash.log_path == sessions[0].log_path
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot, 60)
            await pilot.press("h")  # the history: one row per node
            await pilot.pause()
            assert isinstance(app.screen, HistoryScreen)
            recorded = app.screen.query_one("#recorded", DataTable)
            await wait_for(lambda: recorded.row_count == 2, pilot, 10)
            started = sorted(str(recorded.get_row_at(i)[0]) for i in range(2))
            assert started[0].endswith("· node 0/2") and started[1].endswith("· node 1/2")
            await pilot.press("escape")
    finally:
        for s in sessions:
            await s.host.close()
        for lab in labs:
            lab.cleanup()
