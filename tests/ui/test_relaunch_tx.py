"""The relaunch screen as one transaction, on a real simulator started with `--api-key SECRETVALUE` and
HF_TOKEN: a failed relaunch shows its reason (rule, title, evidence) and every rollback step on the
screen, disarms confirm, and a fresh confirmation plans again from the server that runs now; confirming
many times starts one relaunch; no secret is ever on the screen (its text captured and searched)."""

from __future__ import annotations

import asyncio

from ops.ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health
from textual.geometry import Region
from textual.widgets import Button, Input, Static

from spectui.core.launch import parse_command
from spectui.errors import RelaunchError
from spectui.ops.history import read_history
from spectui.sim.scenarios import SCENARIOS
from spectui.sources.discover import pick_server
from spectui.sources.local import LocalHost
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.relaunch import RelaunchScreen
from spectui.ui.session import Session, replay_lines

SECRETS = ("SECRETVALUE", "hf_topsecret")


async def wait_for(predicate, pilot, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out waiting for the relaunch screen"
        await pilot.pause(0.1)


def screen_text(screen: RelaunchScreen) -> str:
    """Everything the relaunch dialog paints (every widget's visible lines), plus the inputs' whole values."""
    lines = []
    for w in screen.query("*"):
        if w.display and w.size.area:
            lines += [strip.text for strip in w.render_lines(Region(0, 0, w.size.width, w.size.height))]
    lines += [w.value for w in screen.query(Input)]
    return "\n".join(lines)


def assert_no_secret(screen: RelaunchScreen) -> str:
    text = screen_text(screen)
    for secret in SECRETS:
        assert secret not in text, text
    for secret in SECRETS:
        assert secret not in screen.evaluation.text.plain
    return text


async def test_failure_shown_disarmed_replanned_and_one_relaunch_per_confirmation(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    lab = SimLab(tmp_path, free_port())
    try:
        pid = lab.start([*SCENARIOS["healthy"].flags, "--api-key", "SECRETVALUE"],
                        env={**SIM_FAST_ENV, "HF_TOKEN": "hf_topsecret"})
        await asyncio.to_thread(wait_health, lab.port)
        host = LocalHost()
        server = await pick_server(host, pid)
        session = Session(label="local", log_path=server.log_path, host=host, server=server,
                          launch=parse_command(list(server.argv)), server_port=server.port, probe_gpus=False)
        app = SpectuiApp(session)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("r")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, RelaunchScreen)
            other = screen.query_one("#other", Input)
            env = screen.query_one("#env", Input)
            assert "--api-key '***'" in other.value and "HF_TOKEN=***" in env.value  # as the CLI masks them
            # The new server dies capturing graphs, and starts slowly enough (simulated time at 2×, not 40×)
            # that the presses below land while the relaunch runs, however fast the machine.
            assert "SPECTUI_SIM_TIME_SCALE=40" in env.value
            env.value = env.value.replace("SPECTUI_SIM_TIME_SCALE=40", "SPECTUI_SIM_TIME_SCALE=2")
            env.value = env.value + " SPECTUI_SIM_FAULT=oom-at-capture"
            await pilot.pause()
            assert screen.evaluation.launchable and "--api-key '***'" in screen.evaluation.text.plain
            assert "SECRETVALUE" in screen.evaluation.command.args  # kept as it was: masked is not edited
            assert_no_secret(screen)

            # Confirm, then keep confirming (keys and a click) and try to close it while it runs.
            await pilot.press("ctrl+s", "ctrl+s", "ctrl+s", "ctrl+s")
            assert screen.running and screen.query_one("#go", Button).disabled
            screen.action_confirm()
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen and screen.running  # not closed: that would cancel it half-way
            await wait_for(lambda: not screen.running, pilot, timeout=120)
            result = screen.result
            assert result is not None and not result.healthy and result.rolled_back, result
            records = read_history()
            assert len(records) == 1, records  # four confirmations, one relaunch
            assert records[0].outcome == "rolled_back"
            assert sorted((e.name, e.new) for e in records[0].env_diff) == [("SPECTUI_SIM_FAULT", "oom-at-capture"),
                                                                            ("SPECTUI_SIM_TIME_SCALE", "2")]

            # The failure, on the screen itself: reason, the diagnosis that ended it, every rollback step (the
            # progress box scrolls when a slow rollback logged more steps than it shows at once: its content).
            text = assert_no_secret(screen) + "\n" + str(screen.query_one("#progress", Static).render())
            for secret in SECRETS:
                assert secret not in text
            cause = result.new.cause
            assert cause is not None and cause.category == "oom"
            assert "✗ relaunch failed: " in text and f"cause     {cause.rule}  {cause.title}" in text
            assert "evidence  " + cause.evidence[0].strip()[:40] in text
            rollback_steps = [p for p in result.steps if p.rollback]
            assert rollback_steps
            for p in rollback_steps:
                assert f"• {p.step.value.replace('_', ' ')}  {p.message[:30]}" in text
            assert f"rolled back to the previous command: pid {result.rollback.pid} serves again" in text
            # Disarmed: a fresh confirmation is needed.
            go = screen.query_one("#go", Button)
            assert not screen.armed and str(go.label) == "Relaunch" and not go.disabled

            # Without the fault: one press arms only; the second relaunches what runs now (the rollback).
            rolled_pid = result.rollback.pid
            assert session.pid == rolled_pid
            env.value = env.value.replace(" SPECTUI_SIM_FAULT=oom-at-capture", "")
            await pilot.pause()
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert screen.armed and not screen.running and len(read_history()) == 1
            await pilot.press("ctrl+s")
            await wait_for(lambda: app.screen is not screen, pilot, timeout=120)
            records = read_history()
            assert len(records) == 2 and records[1].old_pid == rolled_pid and records[1].outcome == "healthy"
            assert session.pid == records[1].new_pid and lab.servers_in_root() == [records[1].new_pid]
            history_text = (tmp_path / "state" / "spectui" / "history.jsonl").read_text()
            assert not any(s in history_text for s in SECRETS)
            await pilot.press("q")
    finally:
        lab.cleanup()


async def test_a_refused_relaunch_is_shown_without_the_secret(tmp_path) -> None:
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", "/m", "--api-key=SECRETVALUE",
            "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", "4"]
    calls = []
    release = asyncio.Event()  # the refusal comes once the third press has been handled (not after a sleep)

    async def refuse(command, progress):  # type: ignore[no-untyped-def]
        calls.append(command)
        assert "--api-key=SECRETVALUE" in command.args  # the real value reaches ops, unmasked
        progress("checking", "checking pid 4242")
        await release.wait()
        raise RelaunchError(f"pid 4242 is no longer the server (it now runs {' '.join(argv)!r}); nothing was changed")

    session = Session(label="gpu1", log_path="recorded.log", launch=parse_command(argv), current_pid=4242,
                      tail_factory=replay_lines([]), replay=True, probe_gpus=False, relaunch=refuse)
    app = SpectuiApp(session, clock=lambda: 1000.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RelaunchScreen)
        assert "--api-key=***" in screen.query_one("#other", Input).value
        screen.query_one("#f-speculative_num_steps", Input).value = "5"
        await pilot.pause()
        await pilot.press("ctrl+s", "ctrl+s", "ctrl+s")
        await pilot.pause()
        assert screen.running and not screen.armed  # the third press, while it runs, was ignored
        release.set()
        await wait_for(lambda: not screen.running and screen.error is not None, pilot, timeout=10)
        assert len(calls) == 1
        text = assert_no_secret(screen)
        assert "✗ relaunch failed: pid 4242 is no longer the server" in text and "--api-key=***" in text
        assert not screen.armed and str(screen.query_one("#go", Button).label) == "Relaunch"
        await pilot.press("escape")
