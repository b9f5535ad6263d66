"""`spectui sweep` asks before it restarts anything (#24): without a terminal and without --yes it refuses
(exit 2, nothing changed); on a terminal it prints the plan and takes "n" for no (exit 1, nothing changed).
Ctrl-C while a config's server is starting stops at once: that config is neither finished nor benched, the
half-started server is stopped and the original command runs again. Real simulator, real CLI processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from ops_simlab import SEED_FLAGS, SimLab, proc_argv, wait_health

BENCH = ["--requests", "4", "--max-tokens", "32", "--concurrency", "2", "--health-timeout", "60",
         "--stop-timeout", "10", "--no-plot"]
GRID = ["--grid", "speculative-num-steps=2,3"]


def _argv(pid: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spectui.cli", "sweep", "local", "--pid", str(pid), *BENCH, *GRID, *extra]


def _sims(lab: SimLab) -> list[int]:
    return [p for p in lab.servers_in_root() if "spectui.sim" in " ".join(proc_argv(p))]


def test_no_terminal_and_no_yes_is_refused_and_n_on_a_terminal_changes_nothing(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env={"SPECTUI_SIM_TIME_SCALE": "40"})
    wait_health(lab.port)
    done = subprocess.run(_argv(pid), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("spectui sweep: ")
    assert "pass --yes" in done.stderr and "stdin is not a terminal" in done.stderr
    assert _sims(lab) == [pid]

    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(_argv(pid), stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.write(master, b"n\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 1, err
    assert "sweep plan" in out and "relaunch it 2 times" in out  # the plan and the question, before anything
    assert "not confirmed; nothing was changed" in err
    assert _sims(lab) == [pid] and proc_argv(pid)[-len(SEED_FLAGS) - 2:-2] == SEED_FLAGS


def test_ctrl_c_during_a_launch_stops_at_once_and_restores_the_original(lab: SimLab) -> None:
    # Slow start-up (time scale 2): the interrupt lands while the first config's server is loading.
    pid = lab.start(SEED_FLAGS, env={"SPECTUI_SIM_TIME_SCALE": "2"})
    wait_health(lab.port, timeout=90)
    original = proc_argv(pid)
    proc = subprocess.Popen(_argv(pid, "--yes", "--json"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    seen = ""
    deadline = time.monotonic() + 60
    assert proc.stderr is not None
    while "[loading]" not in seen:
        line = proc.stderr.readline()
        assert line and time.monotonic() < deadline, seen[-2000:]
        seen += line
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    err = seen + err
    result = json.loads(out)
    assert result["interrupted"] is True and result["restore"]["healthy"] is True, err[-3000:]
    assert [c["status"] for c in result["configs"]] == ["pending", "pending"]  # nothing benched after Ctrl-C
    assert "warming up and benching" not in err
    assert "interrupt: stopping now" in err and "interrupt: the launch under way (pid" in err
    (now,) = _sims(lab)
    assert proc_argv(now) == original  # the half-started config's server was stopped, the original runs
    assert time.monotonic() - started < 60
