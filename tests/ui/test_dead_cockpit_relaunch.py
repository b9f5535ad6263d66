"""The cockpit's `r` on a server that is gone (#24), through Textual's pilot and the real simulator: the
`missing-steps` demo crashes at start-up (its child reaped, no zombie), the header says GONE, `r` with the
missing flag added starts it again from the launch the cockpit shows — no "no process N", no "not an SGLang
server (it runs: )" — and the header follows the new server instead of staying on GONE."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_relaunch_sim import start_demo_session, stop_relaunched, wait_for
from textual.widgets import Input, Static

from spectui.sources.liveness import LivenessConfig
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.relaunch import RelaunchScreen
from spectui.ui.widgets.header import HeaderBar


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


async def test_r_starts_a_crashed_demo_again_and_the_header_follows_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    demo, path, session = start_demo_session("missing-steps", tmp_path)
    session.liveness = LivenessConfig(interval=0.3)
    first = demo.proc.pid
    app = SpectuiApp(session)
    new_pid = None
    try:
        async with app.run_test(size=(170, 48)) as pilot:
            dash = app.dashboard
            await wait_for(lambda: demo.proc.returncode is not None, pilot, timeout=30)
            assert _state(first) is None  # reaped: no zombie left for discovery or a relaunch to trip on
            header = dash.query_one(HeaderBar)
            await wait_for(lambda: header.info.health == "gone", pilot, timeout=30)
            assert "r starts it again" in header.info.health_reason
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RelaunchScreen)
            note = str(screen.query_one("#gone-note", Static).render())
            assert f"pid {first} is gone: Relaunch starts its last known command again" in note
            assert "environment not known exactly" in note  # the demo's: this login's + its knob variables
            screen.query_one("#f-speculative_num_steps", Input).value = "3"  # the flag the crash asked for
            await pilot.pause()
            assert screen.evaluation.launchable
            await pilot.press("ctrl+s", "ctrl+s")
            await wait_for(lambda: not screen.running and (screen.result is not None or screen.error is not None),
                           pilot, timeout=90)
            assert screen.error is None, screen.error
            assert screen.result.healthy, screen.result.message
            assert screen.result.plan.from_known and "launch command this cockpit shows" in screen.result.plan.known_note
            new_pid = screen.result.new.pid
            argv = Path(f"/proc/{new_pid}/cmdline").read_bytes().split(b"\0")
            assert argv[argv.index(b"--speculative-num-steps") + 1] == b"3"
            assert os.environ.get("SPECTUI_SIM_TIME_SCALE") is None
            assert b"SPECTUI_SIM_TIME_SCALE=40" in Path(f"/proc/{new_pid}/environ").read_bytes().split(b"\0")
            await pilot.press("escape")
            await wait_for(lambda: session.pid == new_pid and dash.log_path != path, pilot, timeout=30)
            await wait_for(lambda: header.info.pid == new_pid and header.info.health != "gone", pilot, timeout=30)
            await pilot.press("q")
    finally:
        demo.stop_sim()
        stop_relaunched(new_pid)


@pytest.mark.sshd
async def test_over_ssh_a_killed_server_is_started_again_with_its_own_environment(sshd, ssh_args, tmp_path,
                                                                                 monkeypatch) -> None:
    import argparse
    import signal

    from spectui.commands.connect import build_session
    from spectui.commands.demo.simrun import DemoRun
    from spectui.sim.scenarios import SCENARIOS

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    demo = DemoRun(SCENARIOS["healthy"], version=None, time_scale=40.0, duration=None,
                   log_path=str(tmp_path / "server.log"))
    demo.start_sim()
    first = demo.proc.pid
    new_pid = None
    try:
        await _wait_port(demo)
        args = argparse.Namespace(target=sshd.target, log=None, pid=first, server_port=None, read_only=False,
                                  **vars(ssh_args))
        session = await build_session(args)
        session.probe_gpus, session.liveness = False, LivenessConfig(interval=0.3)
        app = SpectuiApp(session)
        async with app.run_test(size=(170, 48)) as pilot:
            dash = app.dashboard
            header = dash.query_one(HeaderBar)
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            os.killpg(first, signal.SIGKILL)  # kill -9: no shutdown line, no traceback
            await wait_for(lambda: header.info.health == "gone", pilot, timeout=30)
            await pilot.press("r")
            screen = app.screen
            assert isinstance(screen, RelaunchScreen)
            assert "with the environment read while it ran" in str(screen.query_one("#gone-note", Static).render())
            await pilot.press("ctrl+s", "ctrl+s")
            await wait_for(lambda: not screen.running and (screen.result is not None or screen.error is not None),
                           pilot, timeout=90)
            assert screen.error is None, screen.error  # not "no process N on HOST"
            assert screen.result.healthy and screen.result.plan.from_known, screen.result.message
            assert f"pid {first} as discovered while it ran" in screen.result.plan.known_note
            new_pid = screen.result.new.pid
            assert b"SPECTUI_SIM_TIME_SCALE=40" in Path(f"/proc/{new_pid}/environ").read_bytes().split(b"\0")
            await pilot.press("escape")
            await wait_for(lambda: header.info.pid == new_pid and header.info.health != "gone", pilot, timeout=30)
            await pilot.press("q")
        await session.host.close()
    finally:
        demo.stop_sim()
        stop_relaunched(new_pid)


async def _wait_port(demo) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from spectui.core.launch import flag_value

    port = int(flag_value(demo.sim_argv, "--port") or 0)
    for _ in range(200):
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
