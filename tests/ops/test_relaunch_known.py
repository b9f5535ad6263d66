"""ops.relaunch.run.start_known: a known command started where no server runs (the last one crashed), with a
relaunch's safety and no stop step — refused while the last server still runs or its port stays taken
(nothing changed, nothing recorded), healthy with a new log beside the old one and a history record, and a
start that fails recorded as failed with nothing to roll back to. Real simulator on the local host."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, alive, health, proc_argv, wait_health

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.plan import Edits
from spectui.ops.relaunch.run import KnownCommand, RelaunchOptions, start_known
from spectui.sources.local import LocalHost

FAST = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=1, gpu_timeout_s=5, health_timeout_s=60)


def known_of(lab: SimLab, pid: int) -> KnownCommand:
    env = dict(i.split("=", 1) for i in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1])
    return KnownCommand(tuple(proc_argv(pid)), env, str(lab.root), str(lab.root / "server.log"), lab.port,
                        "127.0.0.1", pid, "python -m spectui.sim")


def kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


async def test_refused_while_the_last_server_runs_or_its_port_is_taken(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    known = known_of(lab, pid)
    store = HistoryStore(tmp_path / "h.jsonl")
    with pytest.raises(RelaunchError, match=f"pid {pid} on local still runs this server.*nothing was changed"):
        await start_known(LocalHost(), known, options=FAST, history=store)
    kill(pid)
    with socket.socket() as holder:  # something else listens on the port now
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", lab.port))
        holder.listen()
        with pytest.raises(RelaunchError, match=f"port {lab.port} on local is still in use.*nothing was changed"):
            await start_known(LocalHost(), known, options=FAST, history=store)
    assert store.read() == [] and lab.servers_in_root() == []


async def test_starts_the_known_command_with_edits_and_records_it(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    known = known_of(lab, pid)
    kill(pid)  # "crashed": nothing runs
    store = HistoryStore(tmp_path / "h.jsonl")
    steps: list[str] = []
    result = await start_known(LocalHost(), known, Edits.from_cli(["speculative-num-steps=3"]), FAST,
                               on_progress=lambda p: steps.append(p.step.value), history=store)
    assert result.healthy, result.message
    # No nvidia-smi on this host: no GPU memory to wait for, so no "waiting for GPU memory" step is shown.
    assert "stopping" not in steps and steps[:3] == ["checking", "waiting_port", "starting"]
    assert "waiting_gpu" not in steps
    (now,) = lab.servers_in_root()
    assert now == result.new.pid and proc_argv(now)[proc_argv(now).index("--speculative-num-steps") + 1] == "3"
    assert health(lab.port) == 200
    assert Path(result.new.log).parent == lab.root and Path(result.new.log).name.startswith("server-")
    (rec,) = store.read()
    assert rec.from_known and rec.outcome == "healthy" and rec.old_pid == pid and rec.new_pid == now
    assert [(c.flag, c.old, c.new) for c in rec.diff] == [("--speculative-num-steps", "1", "3")]
    assert result.to_json()["from_known"] is True


async def test_a_failed_start_is_recorded_and_nothing_is_left_running(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    known = known_of(lab, pid)
    kill(pid)
    store = HistoryStore(tmp_path / "h.jsonl")
    result = await start_known(LocalHost(), known, Edits.from_cli(env_sets=["SPECTUI_SIM_FAULT=oom-at-capture"]),
                               FAST, history=store)
    assert not result.healthy and result.rollback is None
    assert "nothing to roll back to" in result.message and "no server is running" in result.message
    assert result.new.cause is not None and result.new.cause.category == "oom"
    (rec,) = store.read()
    assert rec.from_known and rec.outcome == "failed" and rec.error and rec.diagnoses
    assert not alive(result.new.pid) and lab.servers_in_root() == []
