"""`spectui connect` as a user runs it: bad targets are one-line errors; over a real sshd it finds the
simulated server, follows its log and shows the seed incident; a dropped SSH session is shown and survived."""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import time

import pytest

from spectui.commands.connect import build_session
from spectui.commands.demo.simrun import DemoRun
from spectui.sim.scenarios import SCENARIOS
from spectui.ui.app import SpectuiApp
from spectui.ui.widgets.config_panel import ConfigPanel
from spectui.ui.widgets.diagnoses import DiagnosesPanel


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", "connect", *argv], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("/nonexistent/sglang.log",), "no log file /nonexistent/sglang.log"),
        (("-",), "spectui watch -"),
        (("bad target with spaces",), "cannot read target"),
    ],
)
def test_bad_targets_are_one_line_errors(argv, needle) -> None:
    out = run_cli(*argv)
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


async def wait_for(predicate, pilot, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out waiting for the cockpit"
        await pilot.pause(0.1)


@pytest.mark.sshd
async def test_connect_over_ssh_finds_the_server_and_survives_a_dropped_session(sshd, ssh_args, tmp_path) -> None:
    demo = DemoRun(SCENARIOS["silent-override"], version=None, time_scale=20.0, duration=None,
                   log_path=str(tmp_path / "server.log"))
    path = demo.start_sim()
    try:
        args = argparse.Namespace(target=sshd.target, log=None, pid=demo.proc.pid, server_port=None,
                                  read_only=True, **vars(ssh_args))
        session = await build_session(args)
        assert session.pid == demo.proc.pid
        assert session.log_path == path
        assert "--speculative-num-draft-tokens" in session.launch.args
        app = SpectuiApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.dashboard
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            await dash.wait_processed()  # panels follow the latest update at most 4x/s: bring them up to it
            assert dash.connection == "connected"
            rows = {r.key: r for r in dash.query_one(ConfigPanel).view.rows}
            assert rows["speculative_num_draft_tokens"].differs  # 16 requested, 2 in the server's own log
            assert "SPEC003" in [d.rule for d in dash.query_one(DiagnosesPanel).diagnoses]
            seen_before = dash.query_one("LogView").last_line_no
            states: set[str] = set()
            original = dash._refresh_header

            def record() -> None:
                states.add(dash.connection)
                original()

            dash._refresh_header = record  # type: ignore[method-assign]
            assert sshd.kill_sessions() >= 1
            await wait_for(lambda: dash.query_one("LogView").last_line_no > seen_before + 50
                           and dash.connection == "connected", pilot, timeout=90)
            assert states & {"reconnecting", "lost"}, f"the drop was never shown: {states}"
            await pilot.press("q")
        await session.host.close()
    finally:
        demo.stop_sim()


async def test_connect_to_a_log_file_reads_it_whole_read_only(tmp_path) -> None:
    # A recorded simulator run (tests/ui/data; not a real SGLang server) saved as a plain log file.
    from pathlib import Path

    from spectui.ui.session import read_recorded_log

    lines = read_recorded_log(str(Path(__file__).parent / "data" / "silent-override-sim.log"))
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(lines) + "\n")
    args = argparse.Namespace(target=str(log), log=None, pid=None, server_port=None, read_only=False,
                              ssh_config=None, identity=None, known_hosts=None, accept_new_host_key=False)
    session = await build_session(args)
    assert session.read_only and session.launch is None and session.from_start
    app = SpectuiApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        dash = app.dashboard
        await wait_for(lambda: dash.query_one("LogView").last_line_no == len(lines) and not dash.processing
                       and dash.last_update is not None, pilot)
        await dash.wait_processed()
        rows = {r.key: r for r in dash.query_one(ConfigPanel).view.rows}
        assert dash.query_one(ConfigPanel).view.effective_source == "log"  # from the server_args line
        assert rows["speculative_num_draft_tokens"].effective == 2
        await pilot.press("r")  # read-only: the screen opens with relaunch disabled
        assert app.screen.query_one("#go").disabled
    await session.host.close()


def test_an_unreachable_host_is_retried_visibly_until_ctrl_c() -> None:
    # Nothing listens on port 1: each attempt is refused, and each is shown before the next one.
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "connect", "root@127.0.0.1:1"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while len(lines) < 3:  # three attempts, so it kept trying
            line = proc.stderr.readline()
            assert line, f"connect stopped: {lines}"
            lines.append(line)
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert all("reconnecting" in ln and "connection refused" in ln for ln in lines), lines
    assert proc.returncode == 130
    assert "Traceback" not in rest and "interrupted" in rest


async def test_connect_reads_the_version_the_server_reports(tmp_path) -> None:
    import httpx

    # The simulator emulates 0.5.6.post2 and says so on /server_info; the header shows that, not a guess.
    demo = DemoRun(SCENARIOS["silent-override"], version="0.5.6.post2", time_scale=20.0, duration=None,
                   log_path=str(tmp_path / "server.log"))
    demo.start_sim()
    try:
        port = int(demo.sim_argv[demo.sim_argv.index("--port") + 1])
        end = time.monotonic() + 60
        while True:  # bounded wait for the simulator's HTTP server
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < end, "the simulator never became healthy"
            await asyncio.sleep(0.2)
        args = argparse.Namespace(target="local", log=None, pid=demo.proc.pid, server_port=None, read_only=True,
                                  ssh_config=None, identity=None, known_hosts=None, accept_new_host_key=False)
        session = await build_session(args)
        assert session.server_port == port
        assert session.sglang_version == "0.5.6.post2"
        app = SpectuiApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(lambda: app.dashboard.query_one("HeaderBar").info is not None, pilot, 30)
            assert app.dashboard.query_one("HeaderBar").info.version == "0.5.6.post2"
        await session.host.close()
    finally:
        demo.stop_sim()
