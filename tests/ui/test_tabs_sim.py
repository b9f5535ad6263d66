"""`spectui connect T1 T2 …` against real simulators: one tab per server, the summary strip, the switching
keys, a two-node server recognised from its flags and shown as one group tab (decode lines from the node
that prints them, the other node's error merged in), relaunched whole (tests/ui/test_tabs_group_relaunch.py)
and refused with the reason when a node is not connected."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402

from spectui.commands.connect import build_session  # noqa: E402
from spectui.commands.connect import multi as connectmulti  # noqa: E402
from spectui.ui.multi.app import TabbedApp  # noqa: E402
from spectui.ui.multi.assemble import tab_specs  # noqa: E402
from spectui.ui.widgets.summary_strip import SummaryStrip  # noqa: E402

pytestmark = pytest.mark.timeout(240)
EAGLE = ["--model-path", "/models/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]
TWO_NODES = ["--nnodes", "2", "--dist-init-addr", "127.0.0.1:29555", "--tp-size", "2"]


def connect_args(*targets: str, **extra) -> argparse.Namespace:
    values = dict(targets=list(targets), hosts=None, log=None, pid=None, server_port=None, read_only=True,
                  prometheus=None, selector="", fleet_map=None, baseline_tps=None, ssh_config=None,
                  identity=None, known_hosts=None, accept_new_host_key=False)
    values.update(extra)
    return argparse.Namespace(**values)


@pytest.fixture
def labs(tmp_path):
    started: list[SimLab] = []

    def start(name: str, flags: list[str], env: dict[str, str] | None = None, *, healthy: bool = True) -> str:
        root = tmp_path / name
        root.mkdir()
        lab = SimLab(root, free_port())
        lab.start(flags, log=f"{name}.log", env={**SIM_FAST_ENV, **(env or {})})
        started.append(lab)
        if healthy:
            wait_health(lab.port)
        return f"local:{root / (name + '.log')}"

    yield start
    for lab in started:
        lab.cleanup()


async def wait_for(predicate, pilot, timeout: float = 90.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out waiting for the cockpit"
        await pilot.pause(0.2)


def log_lines(log) -> list[str]:
    return list(log._texts)  # the lines the pane holds (its own list; the tests only read it)


def serving(tab) -> bool:
    u = tab.dashboard.last_update
    return u is not None and u.snapshot is not None and u.snapshot.samples > 0


async def test_three_servers_in_tabs_strip_and_switching_keys(labs, tmp_path) -> None:
    a = labs("a", EAGLE)
    b = labs("b", [*EAGLE, "--speculative-num-steps", "1", "--speculative-num-draft-tokens", "2"],
             {"SPECTUI_SIM_ALPHA": "0.3"})
    hosts = tmp_path / "hosts.txt"
    c_target = labs("c", ["--model-path", "/models/llama"])
    hosts.write_text(f"# the third server, from a hosts file\n{c_target}  baseline-tps=50\n\n")
    args = connect_args(a, b, hosts=str(hosts), baseline_tps=None)
    targets = connectmulti.all_targets(args)
    assert [t for t, _ in targets] == [a, b, c_target] and targets[2][1] == 50.0
    sessions = await connectmulti.sessions_for(args, [t for t, _ in targets], build_session)
    assert all(s.server is not None and s.launch is not None for s in sessions)  # each matched by its log
    assert len({s.pid for s in sessions}) == 3
    specs = tab_specs(sessions, [b for _, b in targets])
    assert [s.label for s in specs] == ["local:a.log", "local:b.log", "local:c.log"]
    app = TabbedApp(specs)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(lambda: all(serving(t) for t in app.tabs), pilot)
            strip = app.screen.query_one(SummaryStrip)
            # the strip refreshes once a second; a hidden tab's values are there once its batch was parsed
            await wait_for(lambda: len(strip.entries) == 3 and all(e.accept_len is not None for e in strip.entries[:2])
                           and strip.entries[2].tokens_per_s is not None, pilot, 30)
            assert strip.display and len(strip.entries) == 3 and strip.active == 0
            by = {e.label: e for e in strip.entries}
            assert by["local:a.log"].accept_len > by["local:b.log"].accept_len  # α 0.8 steps 3 vs α 0.3 steps 1
            # c's baseline-tps=50 is a single stream's and c runs several requests: no × number (#23), a "×–"
            c = by["local:c.log"]
            assert c.accept_len is None and c.baseline_tps == 50 and (c.running or 0) > 1 and c.speedup is None
            text = strip.render().plain
            assert " 1 local:a.log SERVING" in text and "×–" in text
            # each tab follows its own log (different pids, different lines)
            assert app.tabs[0].dashboard.session.pid != app.tabs[1].dashboard.session.pid
            await pilot.press("2")
            assert app.active == 1 and app.screen is app.tabs[1].dashboard
            await pilot.press("right_square_bracket")
            assert app.active == 2 and app.screen is app.tabs[2].dashboard
            await pilot.press("right_square_bracket")  # wraps around
            assert app.active == 0
            await pilot.press("left_square_bracket")
            assert app.active == 2
            await pilot.press("ctrl+pageup")
            assert app.active == 1
            await pilot.press("9")  # no tab 9: said, nothing changes
            assert app.active == 1
            await wait_for(lambda: app.screen.query_one(SummaryStrip).active == 1, pilot, 30)  # once a second
            # a background tab kept following while another was shown
            n0 = app.tabs[0].dashboard.query_one("LogView").last_line_no
            await wait_for(lambda: app.tabs[0].dashboard.query_one("LogView").last_line_no > n0, pilot, 30)
            # the app's actions act on the shown tab
            assert app.session is app.tabs[1].session and app.cockpit is app.tabs[1].cockpit
            await pilot.press("question_mark")
            await pilot.pause()
            assert "Help" in type(app.screen).__name__
            await pilot.press("2")  # under a dialog the tab keys are not active
            await pilot.press("escape")
            assert app.active == 1
    finally:
        for s in sessions:
            await s.host.close()


async def test_a_two_node_server_is_one_group_tab_and_a_missing_node_refuses_its_relaunch(labs) -> None:
    # node 1 joins node 0's rendezvous (neither is healthy before both run); node 0 crashes after a while and
    # node 1, its peer gone, fails too: its error is merged into the group tab
    node1 = labs("node1", [*EAGLE, *TWO_NODES, "--node-rank", "1"], healthy=False)
    node0 = labs("node0", [*EAGLE, *TWO_NODES, "--node-rank", "0"], {"SPECTUI_SIM_FAULT": "crash-after 60",
                                                                    "SPECTUI_SIM_TRAFFIC": "0.2"})
    plain = labs("plain", EAGLE)
    args = connect_args(node1, plain, node0)
    sessions = await connectmulti.sessions_for(args, [node1, plain, node0], build_session)
    specs = tab_specs(sessions)
    assert [s.label for s in specs] == ["local:node1.log+local:node0.log [2 nodes]", "local:plain.log"]
    group = specs[0]
    assert group.refusal is None and group.session.group is not None  # every node connected: relaunched whole
    assert group.session.pid == sessions[2].pid  # node rank 0 leads
    (alone,) = tab_specs([sessions[2]])  # node 0 without node 1
    assert alone.refusal and "2 nodes" in alone.refusal and "missing node rank 1" in alone.refusal
    app = TabbedApp(specs)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.tabs[0].dashboard
            log = dash.query_one("LogView")
            await wait_for(lambda: serving(app.tabs[0]), pilot)
            await wait_for(lambda: any("error on local:node1.log" in ln for ln in log_lines(log)), pilot, 60)
            await dash.wait_processed()
            text = log_lines(log)
            assert any("Decode batch" in ln for ln in text)
            assert any("Traceback" in ln for ln in text), text[-40:]
            node0_decodes = Path(node0[len("local:"):]).read_text().count("Decode batch")
            assert sum("Decode batch" in ln for ln in text) <= node0_decodes  # only node 0's decode lines
            await pilot.press("r")  # the group's relaunch screen (read-only here: disabled)
            await pilot.pause()
            assert type(app.screen).__name__ == "RelaunchScreen" and app.screen.query("#group-note")
            await pilot.press("escape")
            await pilot.pause(1.2)
            strip = app.screen.query_one(SummaryStrip)
            assert strip.entries[0].group and strip.entries[0].worst == "error"
            await pilot.press("2", "r")  # the ordinary server's relaunch screen still opens (read-only here)
            await pilot.pause()
            assert type(app.screen).__name__ == "RelaunchScreen" and not app.screen.query("#group-note")
        lone = TabbedApp([alone])
        async with lone.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("r")
            await pilot.pause()
            assert lone.screen is lone.tabs[0].dashboard  # no relaunch screen: refused with the reason
    finally:
        for s in sessions:
            await s.host.close()


async def test_a_target_whose_server_is_gone_is_not_matched_to_the_hosts_only_server(labs, tmp_path,
                                                                                     monkeypatch) -> None:
    from spectui.sources import discover

    plain = labs("plain", EAGLE)
    stale = tmp_path / "old" / "server.log"  # the log of a server that exited (the host runs only `plain` now)
    stale.parent.mkdir()
    stale.write_text("[2026-12-01 10:00:00] server_args=ServerArgs(model_path='/models/other')\n")
    real_pick = discover.pick_server

    async def only_plain(host, pid=None):  # this machine may run other tests' servers: the host runs one here
        if pid is not None:
            return await real_pick(host, pid)
        (mine,) = [s for s in await discover.discover(host) if (s.log_path or "").endswith("plain.log")
                   and str(tmp_path) in s.log_path]
        return mine

    monkeypatch.setattr(discover, "pick_server", only_plain)
    args = connect_args(f"local:{stale}", plain)
    sessions = await connectmulti.sessions_for(args, [f"local:{stale}", plain], build_session)
    try:
        gone, live = sessions
        assert gone.server is None and gone.launch is None and gone.log_path == str(stale)
        assert live.server is not None and live.server.log_path.endswith("plain.log")
    finally:
        for s in sessions:
            await s.host.close()
