"""Relaunch is one transaction per server: two concurrent ops.relaunch.run calls start one relaunch (the second
is refused, nothing changed), a relaunch held by another spectui process is refused, a cancelled relaunch
never leaves its history record "running", and an env-only relaunch records its environment diff
(masked). Real simulators on the local host throughout."""

from __future__ import annotations

import asyncio
import fcntl
import os
from datetime import datetime
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, alive, proc_argv, wait_health

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore, masked_diff
from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.ops.relaunch.run import RelaunchOptions, Step, execute
from spectui.sources.base import ServerProcess
from spectui.sources.local import LocalHost

FAST = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5, health_timeout_s=60)


def server_of(pid: int, port: int, log: Path) -> ServerProcess:
    env = dict(i.split("=", 1) for i in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1])
    return ServerProcess(pid=pid, pgid=os.getpgid(pid), argv=tuple(proc_argv(pid)), env=env,
                         cwd=os.readlink(f"/proc/{pid}/cwd"), log_path=str(log), port=port, host_addr="127.0.0.1",
                         program="python -m spectui.sim")


def plan_for(lab: SimLab, pid: int, edits: Edits):  # type: ignore[no-untyped-def]
    return build_plan(server_of(pid, lab.port, lab.root / "server.log"), edits, host_name="local",
                      now=datetime.now())


async def test_two_concurrent_relaunches_start_one(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env={**SIM_FAST_ENV, "HF_TOKEN": "hf_old_secret"})
    wait_health(lab.port)
    # An env-only edit, with a secret among it: recorded as an environment diff, masked.
    plan = plan_for(lab, pid, Edits.from_cli(env_sets=["SPECTUI_SIM_TRAFFIC=2", "HF_TOKEN=hf_new_secret"]))
    history = HistoryStore(lab.root.parent / "h.jsonl")
    first, second = await asyncio.gather(execute(LocalHost(), plan, FAST, history=history),
                                         execute(LocalHost(), plan, FAST, history=history),
                                         return_exceptions=True)
    results = [r for r in (first, second) if not isinstance(r, BaseException)]
    refused = [r for r in (first, second) if isinstance(r, BaseException)]
    assert len(results) == 1 and len(refused) == 1, (first, second)
    assert isinstance(refused[0], RelaunchError)
    assert "already running" in str(refused[0]) and "nothing was changed" in str(refused[0])
    result = results[0]
    assert result.healthy, result.message
    assert lab.servers_in_root() == [result.new.pid] and not alive(pid)
    records = history.read()
    assert len(records) == 1 and records[0].outcome == "healthy" and records[0].new_pid == result.new.pid
    rec = records[0]
    assert rec.diff == [] and {(e.name, e.old, e.new) for e in rec.env_diff} == {
        ("SPECTUI_SIM_TRAFFIC", "4", "2"), ("HF_TOKEN", "***", "***")}
    assert rec.changes_summary() != "–" and "env SPECTUI_SIM_TRAFFIC 4→2" in rec.changes_summary()
    assert "secret" not in history.path.read_text()
    # The lock is released at the end: the next relaunch of the server (now the new pid) goes ahead.
    again = await execute(LocalHost(), plan_for(lab, result.new.pid, Edits()), FAST, history=history)
    assert again.healthy and len(history.read()) == 2


async def test_a_relaunch_held_by_another_process_is_refused(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    history = HistoryStore(lab.root.parent / "h.jsonl")
    locks = history.path.parent / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    # What another spectui process relaunching this server holds: the flock of its lock file.
    with open(locks / f"local-port-{lab.port}.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RelaunchError, match=r"already running in another spectui process.*nothing was changed"):
            await execute(LocalHost(), plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=3"])), FAST,
                          history=history)
    assert alive(pid) and lab.servers_in_root() == [pid] and history.read() == []


async def test_a_cancelled_relaunch_is_recorded_as_failed_with_the_reason(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    history = HistoryStore(lab.root.parent / "h.jsonl")
    started = asyncio.Event()

    def progress(p) -> None:  # type: ignore[no-untyped-def]
        if p.step is Step.STARTING:
            started.set()

    plan = plan_for(lab, pid, Edits.from_cli(["speculative-num-steps=3"]))
    task = asyncio.create_task(execute(LocalHost(), plan, FAST, history=history, on_progress=progress))
    await asyncio.wait_for(started.wait(), 60)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (rec,) = history.read()
    assert rec.outcome == "failed" and rec.ended is not None
    assert rec.error is not None and rec.error.startswith("relaunch cancelled while ")
    assert rec.new_pid is not None and f"started as pid {rec.new_pid}" in rec.error
    # Cancellation released the lock: a new relaunch is not refused as "already running".
    wait_health(lab.port)
    again = await execute(LocalHost(), plan_for(lab, rec.new_pid, Edits()), FAST, history=history)
    assert again.healthy


def test_secret_flag_values_are_masked_in_the_history_diff() -> None:
    from spectui.core.launch import FlagChange

    rows = masked_diff([FlagChange("--api-key", "old-secret", "new-secret"), FlagChange("--port", "1", "2"),
                        FlagChange("--hf-token", None, "tok")])
    assert rows == [{"flag": "--api-key", "old": "***", "new": "***"}, {"flag": "--port", "old": "1", "new": "2"},
                    {"flag": "--hf-token", "old": None, "new": "***"}]
