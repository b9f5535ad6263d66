"""A server that crashes in the middle of a sweep's bench (the simulator's `crash-after N` fault in one grid
axis): that config is recorded `failed` with its cause, and the sweep goes on — nothing runs any more, so the
next config, and at the end the original command, are started from the known command (ops.relaunch.run.start_known:
no stop step, port and GPU checks, a new log beside the old one, health while the rules read the log, history).
Real simulator, bounded well under 90 s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ops_simlab import SEED_FLAGS, SimLab, health, proc_argv, wait_health

from spectui.ops.history import read_history

FAST = {"SPECTUI_SIM_TIME_SCALE": "40"}
BENCH = ["--requests", "8", "--max-tokens", "48", "--concurrency", "2", "--health-timeout", "60",
         "--stop-timeout", "10", "--no-plot", "--yes"]
GRID = ["--grid", "speculative-num-steps=1,3", "--grid", "env:SPECTUI_SIM_FAULT=-,crash-after 3"]


def running(lab: SimLab) -> list[int]:
    return [p for p in lab.servers_in_root() if "spectui.sim" in " ".join(proc_argv(p))]


def test_a_crash_mid_bench_is_recorded_and_the_sweep_goes_on_to_the_original(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    original = proc_argv(pid)
    t0 = time.monotonic()
    argv = [sys.executable, "-m", "spectui.cli", "sweep", "local", "--pid", str(pid), *BENCH, *GRID, "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=85)
    assert time.monotonic() - t0 < 85
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    configs = out["configs"]
    assert [c["set"]["env:SPECTUI_SIM_FAULT"] for c in configs] == ["-", "crash-after 3", "-", "crash-after 3"]
    assert [c["status"] for c in configs] == ["ok", "failed", "ok", "failed"], [c.get("reason") for c in configs]
    for c in configs[1::2]:  # crashed mid-bench: the cause named, with its evidence line from the log
        assert c["reason"] and "crash" in json.dumps(c["diagnoses"]).lower(), c
        rule = c["reason"].split(":")[0]
        assert any(d["rule"] == rule and d["evidence"] for d in c["diagnoses"]), c
        assert c["bench"] is None or c["bench"]["requests"]["failed"] > 0
    assert out["launches"] == 4
    # #2 and the final restore were started from the known command (no server ran), each with a new log
    # beside the old one, recorded in the history.
    hist = read_history()
    by_id = {r.id: r for r in hist}
    after_crash = by_id[configs[2]["launch"]["history_id"]]
    assert after_crash.from_known and after_crash.outcome == "healthy"
    assert after_crash.old_pid == configs[1]["launch"]["pid"]
    restore = by_id[out["restore"]["history_id"]]
    assert restore.from_known and restore.outcome == "healthy"
    assert [r.from_known for r in hist] == [False, False, True, False, True]
    for r in (after_crash, restore):
        assert r.log is not None and Path(r.log).parent == lab.root and Path(r.log).name.startswith("server-")
    # The original command runs again, healthy.
    assert out["applied"] == "original" and out["restore"]["relaunched"] and out["restore"]["healthy"]
    (now,) = running(lab)
    assert proc_argv(now) == original and health(lab.port) == 200
