"""The cockpit's server picker (#24): `connect HOST` on a host running several servers asks which one on a
terminal (a small Textual screen: pid, port, model, algorithm, log; enter opens, escape gives up) instead
of exiting; without a terminal the servers are listed. Pilot for the screen, real simulators for connect."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from textual.widgets import OptionList

from spectui.commands.connect import build_session
from spectui.commands.demo.simrun import free_port
from spectui.errors import DiscoveryError, UsageError
from spectui.sources.base import ServerProcess
from spectui.ui.screens.picker import ServerPicker


def _proc(pid: int, port: int, model: str, algo: str | None) -> ServerProcess:
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)]
    argv += ["--speculative-algorithm", algo] if algo else []
    return ServerProcess(pid, pid, tuple(argv), {}, "/", f"/logs/{pid}.log", port, "127.0.0.1")


async def test_the_picker_lists_the_servers_and_enter_opens_the_highlighted_one() -> None:
    servers = [_proc(101, 30000, "/m/alpha", "EAGLE3"), _proc(202, 30001, "/m/beta", None)]
    app = ServerPicker("gpu1", servers)
    async with app.run_test(size=(140, 20)) as pilot:
        rows = app.query_one(OptionList)
        assert rows.option_count == 2
        shown = [str(rows.get_option_at_index(i).prompt) for i in range(2)]
        assert "pid 101" in shown[0] and "port 30000" in shown[0] and "model /m/alpha  algorithm EAGLE3" in shown[0]
        assert "model /m/beta  algorithm none" in shown[1] and "log /logs/202.log" in shown[1]
        await pilot.press("down", "enter")
    assert app.return_value is servers[1]
    app = ServerPicker("gpu1", servers)
    async with app.run_test(size=(140, 20)) as pilot:
        await pilot.press("escape")
    assert app.return_value is None


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


async def test_connect_asks_which_server_and_opens_the_one_picked(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    env["SPECTUI_SIM_TIME_SCALE"] = "40"
    procs = []
    try:
        for name in ("alpha", "beta"):
            port = free_port()
            with open(tmp_path / f"{name}.log", "wb") as log:
                procs.append((subprocess.Popen(
                    [sys.executable, "-m", "spectui.sim", "--model-path", f"/m/{name}", "--port", str(port)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    env=env), port))
        deadline = time.monotonic() + 60
        while not all(_healthy(p) for _, p in procs):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (a, _), (b, port_b) = procs
        asked: list[list[int]] = []

        async def pick(host_name: str, servers):  # what the picker screen returns: the beta server
            asked.append([s.pid for s in servers])
            return next(s for s in servers if s.port == port_b)

        args = argparse.Namespace(target="local", log=None, pid=None, server_port=None, read_only=True)
        session = await build_session(args, pick=pick)
        assert {a.pid, b.pid} <= set(asked[0])
        assert session.pid == b.pid and session.log_path == str(tmp_path / "beta.log")

        async def give_up(host_name: str, servers):
            return None

        with pytest.raises(UsageError, match="no server picked on local; nothing opened"):
            await build_session(args, pick=give_up)
        with pytest.raises(DiscoveryError, match=r"SGLang servers on local; pick one with --pid PID or --server-port"):
            await build_session(args)  # no terminal: the list, and exit
    finally:
        for p, _ in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
