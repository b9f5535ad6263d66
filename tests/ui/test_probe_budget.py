"""What an attached cockpit costs the server, counted where the server sees it: the simulator's access log
(uvicorn's lines, as SGLang writes them into the server's log). An idle cockpit on an idle server stays
within the budget of one request a second (and still judges it healthy); two tabs of the same server share
one prober: together they ask no more than one tab does (#29)."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

import pytest
from ops_simlab import SimLab, free_port, wait_health  # noqa: E402

from spectui.commands.connect import build_session  # noqa: E402
from spectui.sources.liveness import LivenessConfig  # noqa: E402
from spectui.ui.app import SpectuiApp  # noqa: E402
from spectui.ui.multi.app import TabbedApp, TabSpec  # noqa: E402

pytestmark = pytest.mark.timeout(90)

BUDGET_PER_S = 1.0  # the budget: at most one request a second from an idle cockpit
WINDOW_S = 8.0
CALM_S = LivenessConfig().calm_interval  # an answering, idle server is asked this often
VOUCHED_S = LivenessConfig().vouched_interval  # and this often while its decode lines prove it alive
# a line of uvicorn's access log for one of the cockpit's own questions
PROBE_LINE = re.compile(r'"GET /(health|health_generate|server_info|get_server_info|metrics)[ ?]')


def connect_args(pid: int) -> argparse.Namespace:
    return argparse.Namespace(target="local", log=None, pid=pid, server_port=None, read_only=True, ssh_config=None,
                              identity=None, known_hosts=None, accept_new_host_key=False)


def probes_since(log: Path, offset: int) -> list[str]:
    text = log.read_bytes()[offset:].decode(errors="replace")
    return [line for line in text.splitlines() if PROBE_LINE.search(line)]


async def count_window(pilot, log: Path, ready) -> list[str]:  # type: ignore[no-untyped-def]
    """The probe lines the server logged in WINDOW_S, once `ready()` (the cockpit judged it healthy)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    while not ready():
        assert loop.time() - began < 40, "the cockpit never judged the idle server healthy"
        await pilot.pause(0.1)
    await pilot.pause(1.0)  # the first round's questions (and discovery's) are behind us
    offset = log.stat().st_size
    await pilot.pause(WINDOW_S)
    return probes_since(log, offset)


@pytest.fixture
def lab(tmp_path):  # type: ignore[no-untyped-def]
    lab = SimLab(tmp_path, free_port())
    yield lab
    lab.cleanup()


def healthy(dash) -> bool:  # type: ignore[no-untyped-def]
    return dash.health is not None and dash.health.state == "healthy"


async def test_an_idle_cockpit_stays_within_one_request_a_second(lab) -> None:  # type: ignore[no-untyped-def]
    pid = lab.start(["--model-path", "/models/llama"], env={"SPECTUI_SIM_TIME_SCALE": "40"})  # no traffic
    wait_health(lab.port)
    session = await build_session(connect_args(pid))
    session.liveness = LivenessConfig()  # the defaults an operator gets (not the environment's)
    app = SpectuiApp(session)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            lines = await count_window(pilot, lab.root / "server.log", lambda: healthy(app.dashboard))
            assert healthy(app.dashboard)  # still judged, on fewer questions
            await pilot.press("q")
    finally:
        await session.host.close()
    assert lines, "no probe at all in the window: the cockpit stopped watching"
    assert len(lines) <= BUDGET_PER_S * WINDOW_S, f"{len(lines)} requests in {WINDOW_S:g} s: {lines}"
    assert len(lines) <= WINDOW_S / CALM_S + 1, f"an idle server is asked every {CALM_S:g} s: {lines}"


async def test_decode_lines_slow_the_probes_down(lab) -> None:  # type: ignore[no-untyped-def]
    """A busy server's fresh decode lines prove it alive: /health every VOUCHED_S instead of every second."""
    pid = lab.start(["--model-path", "/models/llama"], env={"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_TRAFFIC": "0.5"})
    wait_health(lab.port)
    session = await build_session(connect_args(pid))
    session.liveness = LivenessConfig()
    app = SpectuiApp(session)
    log = lab.root / "server.log"
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            offset = log.stat().st_size
            lines = await count_window(pilot, log, lambda: healthy(app.dashboard))
            decodes = log.read_bytes()[offset:].count(b"Decode batch")
            assert healthy(app.dashboard)
            await pilot.press("q")
    finally:
        await session.host.close()
    assert decodes > WINDOW_S, "the simulator was not decoding: nothing proved it alive"
    health = [ln for ln in lines if '"GET /health ' in ln]
    assert len(health) <= WINDOW_S / VOUCHED_S + 1, f"{len(health)} /health in {WINDOW_S:g} s while decoding: {health}"


async def test_two_tabs_of_one_server_share_its_probe(lab) -> None:  # type: ignore[no-untyped-def]
    pid = lab.start(["--model-path", "/models/llama"], env={"SPECTUI_SIM_TIME_SCALE": "40"})
    wait_health(lab.port)
    sessions = [await build_session(connect_args(pid)) for _ in range(2)]
    for s in sessions:
        s.liveness = LivenessConfig()
    app = TabbedApp([TabSpec(f"tab{i}", s) for i, s in enumerate(sessions)])
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            lines = await count_window(pilot, lab.root / "server.log",
                                       lambda: all(healthy(t.dashboard) for t in app.tabs))
            assert all(healthy(t.dashboard) for t in app.tabs)  # both tabs judge it, from the one prober
            await pilot.press("q")
    finally:
        for s in sessions:
            await s.host.close()
    health = [ln for ln in lines if '"GET /health ' in ln]
    assert health, "no /health at all in the window"
    # one tab's cadence, not two: each tab asking for itself would be twice as many
    assert len(health) <= WINDOW_S / CALM_S + 1, f"{len(health)} /health in {WINDOW_S:g} s from 2 tabs: {health}"


async def test_tabs_of_one_host_share_its_gpu_poll(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two tabs of servers on one host (each followed, so each holds the host's prober): one nvidia-smi every
    poll for both, not one each. A real `nvidia-smi` on PATH that records every run."""
    import os
    import stat
    import subprocess

    from spectui.sources.local import LocalHost
    from spectui.ui.screens.dashboard import GPU_POLL_INTERVAL
    from spectui.ui.session import Session
    from spectui.ui.widgets.gpu_strip import GpuStrip

    runs = tmp_path / "runs"
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\necho run >> {runs}\nprintf '0, 87, 71234, 81559\\n'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    servers = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]  # the followed processes (no HTTP port)
    logs = []
    for i in range(2):
        logs.append(tmp_path / f"server{i}.log")
        logs[-1].write_text("[2026-12-02 01:00:00] Load weight begin. avail mem=78.50 GB\n")
    sessions = [Session(label=f"gpu{i}", log_path=str(logs[i]), host=LocalHost(), current_pid=p.pid,
                        probe_gpus=True, liveness=LivenessConfig()) for i, p in enumerate(servers)]
    app = TabbedApp([TabSpec(s.label, s) for s in sessions])
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            loop = asyncio.get_running_loop()
            began = loop.time()
            while not all(t.dashboard.query_one(GpuStrip).gpus for t in app.tabs):
                assert loop.time() - began < 20, "the GPU strips never filled"
                await pilot.pause(0.1)
            await pilot.pause(GPU_POLL_INTERVAL + 1.5)  # a second poll of every tab
            assert all(t.dashboard.gpu_note == "ok" for t in app.tabs)
            await pilot.press("q")
    finally:
        for p in servers:
            p.kill()
            p.wait()
    n = len(runs.read_text().splitlines())
    assert 1 <= n <= 2, f"nvidia-smi ran {n} times for two tabs over two polls (each tab alone: 4)"
