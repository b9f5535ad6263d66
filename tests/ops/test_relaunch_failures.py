"""Every failure path of the relaunch engine ends with a clear message and the host in the old state or
the new one: a vanished server, a read-only host, a user without permission, a port that is never freed,
a health timeout, a crash without rollback. Real processes on the local host throughout."""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, alive, proc_argv, wait_health

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.ops.relaunch.run import RelaunchOptions, execute
from spectui.sources.base import ServerProcess
from spectui.sources.local import LocalHost

FAST = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5, health_timeout_s=60)

# A stand-in SGLang for the port test: `python -m sglang.launch_server --port N` answering /health 200.
# On its first start it forks a child into a new session that keeps the listening socket: the operator's
# classic "something still holds the port" after the server's process group is gone.
FAKE_SGLANG = '''
import http.server, os, socket, sys, time
port = int(sys.argv[sys.argv.index("--port") + 1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", port))
s.listen()
if not os.path.exists("leaked") and os.fork() == 0:
    os.setsid()
    open("leaked", "w").close()
    time.sleep(300)
    os._exit(0)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", port), H, bind_and_activate=False)
srv.socket = s
print("The server is fired up and ready to roll!", flush=True)
srv.serve_forever()
'''


def server_of(pid: int, port: int, log: Path) -> ServerProcess:
    env = dict(i.split("=", 1) for i in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1])
    return ServerProcess(pid=pid, pgid=os.getpgid(pid), argv=tuple(proc_argv(pid)), env=env,
                         cwd=os.readlink(f"/proc/{pid}/cwd"), log_path=str(log), port=port, host_addr="127.0.0.1",
                         program="python -m spectui.sim")


def plan_for(lab: SimLab, pid: int, edits: Edits) -> object:
    return build_plan(server_of(pid, lab.port, lab.root / "server.log"), edits, host_name="local",
                      now=datetime.now())


async def test_vanished_server_changes_nothing(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=15"]))
    os.killpg(pid, 9)
    while alive(pid):
        time.sleep(0.05)
    history = HistoryStore(lab.root.parent / "h.jsonl")
    with pytest.raises(RelaunchError, match=r"is gone .*nothing was changed"):
        await execute(LocalHost(), plan, FAST, history=history)
    assert lab.servers_in_root() == [] and history.read() == []


async def test_read_only_host_changes_nothing(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=15"]))
    with pytest.raises(RelaunchError, match="read-only"):
        await execute(LocalHost(read_only=True), plan, FAST, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert alive(pid) and lab.servers_in_root() == [pid]


class OtherUserHost(LocalHost):
    """This machine, but every command runs as user `nobody` (spectui connected as the wrong user)."""

    async def run(self, argv, *, timeout=None, check=False):  # type: ignore[no-untyped-def]
        return await super().run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
                                 timeout=timeout, check=check)


async def test_permission_denied_changes_nothing(lab: SimLab) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run commands as another user")
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=15"]))
    with pytest.raises(RelaunchError, match=r"permission denied.*nothing was changed"):
        await execute(OtherUserHost(), plan, FAST, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert alive(pid)
    wait_health(lab.port, 30)


async def test_port_never_freed_rolls_back(lab: SimLab) -> None:
    pkg = lab.root.parent / "fake" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(FAKE_SGLANG)
    pid = lab.start(["--model-path", "/m"], module="sglang.launch_server", env={"PYTHONPATH": str(pkg.parent)})
    wait_health(lab.port)
    server = server_of(pid, lab.port, lab.root / "server.log")
    plan = build_plan(server, Edits.from_cli(["mem-fraction-static=0.7"]), host_name="local", now=datetime.now())
    opts = RelaunchOptions(stop_grace_s=5, kill_wait_s=5, port_timeout_s=1, gpu_timeout_s=5, health_timeout_s=30)
    result = await execute(LocalHost(), plan, opts, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert not result.healthy and result.new.pid is None  # the new command was never started
    assert f"port {lab.port} still in use" in result.message
    assert result.rolled_back and alive(result.rollback.pid)
    assert proc_argv(result.rollback.pid) == list(server.argv)
    # No /health probe here: the leaked socket shares the port (SO_REUSEPORT) and swallows some
    # connections, which is exactly why relaunch refused to start the new command on it.


async def test_health_timeout_rolls_back(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    # The new launch starts 40x slower than the old one: it cannot be healthy within 1 s.
    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=15"], env_sets=["SPECTUI_SIM_TIME_SCALE=1"]))
    opts = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5, health_timeout_s=1)
    result = await execute(LocalHost(), plan, opts, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert not result.healthy and "not healthy after 1 s" in (result.new.error or "")
    assert not alive(result.new.pid)  # the slow new launch was stopped, not left half-started
    assert result.rolled_back
    wait_health(lab.port, 30)
    assert proc_argv(result.rollback.pid) == list(plan.server.argv)


async def test_crash_without_rollback_says_nothing_runs(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    plan = plan_for(lab, pid, Edits.from_cli(env_sets=["SPECTUI_SIM_FAULT=oom-at-capture"]))
    opts = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5,
                           health_timeout_s=60, rollback=False)
    history = HistoryStore(lab.root.parent / "h.jsonl")
    result = await execute(LocalHost(), plan, opts, history=history)
    assert not result.healthy and result.rollback is None
    assert "not rolled back" in result.message
    assert any(d.category == "oom" for d in result.new.diagnoses)
    assert not alive(pid) and history.read()[-1].outcome == "failed"


# No GPU on the test machine: this stands in for nvidia-smi and prints, in nvidia-smi's CSV format
# (`--query-compute-apps=pid,used_memory --format=csv`), the rows listed in $FAKE_GPU_APPS.
FAKE_NVIDIA_SMI = """#!/bin/sh
echo "pid, used_memory [MiB]"
cat "$FAKE_GPU_APPS"
"""


async def test_gpu_memory_never_released_names_the_holder_and_rolls_back(
        lab: SimLab, monkeypatch: pytest.MonkeyPatch) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    tools = lab.root.parent / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
    (tools / "nvidia-smi").chmod(0o755)
    apps = lab.root.parent / "apps.csv"
    apps.write_text(f"{pid}, 71234 MiB\n4242, 100 MiB\n")  # the server's memory is never released
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_APPS", str(apps))
    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=15"]))
    opts = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=1, health_timeout_s=60)
    result = await execute(LocalHost(), plan, opts, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert f"GPU memory still held after 1 s by pid {pid} (71234 MiB)" in result.message
    assert "4242" not in result.message  # another user's job on the GPU is not the server's
    assert result.new.pid is None  # the new command was never started on a GPU still in use
    # The old command is restored (the best chance of getting back to a serving host) and says so.
    assert result.rolled_back
    wait_health(lab.port, 30)
    assert proc_argv(result.rollback.pid) == list(plan.server.argv)


async def test_progress_as_async_iterator_ends_with_the_refusal(tmp_path: Path) -> None:
    from spectui.ops.relaunch.run import Progress, Step, relaunch_events

    server = ServerProcess(pid=999999, pgid=999999, argv=(sys.executable, "-m", "sglang.launch_server",
                                                           "--model-path", "/m"),
                           env={}, cwd=str(tmp_path), log_path=None, port=30000, host_addr="127.0.0.1")
    plan = build_plan(server, Edits(), host_name="local", now=datetime.now())
    items = [i async for i in relaunch_events(LocalHost(read_only=True), plan, FAST,
                                              history=HistoryStore(tmp_path / "h.jsonl"))]
    assert isinstance(items[0], Progress) and items[0].step == Step.CHECKING
    assert isinstance(items[-1], RelaunchError) and "read-only" in str(items[-1])


async def test_unreadable_environment_is_refused(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    server = server_of(pid, lab.port, lab.root / "server.log")
    # What discovery yields when /proc/PID/environ is not readable (another user's server).
    blind = ServerProcess(**{**{f: getattr(server, f) for f in server.__dataclass_fields__}, "env": {}})
    plan = build_plan(blind, Edits.from_cli(["speculative-num-steps=15"]), host_name="local", now=datetime.now())
    with pytest.raises(RelaunchError, match=r"environ.*nothing was changed"):
        await execute(LocalHost(), plan, FAST, history=HistoryStore(lab.root.parent / "h.jsonl"))
    assert alive(pid) and lab.servers_in_root() == [pid]
