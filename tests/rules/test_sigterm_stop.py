"""A SIGTERM to a real server's process group (relaunch's stop) is a stop, not a crash: the real CPU server
(shared/real-sglang) logs its children dying of the same signal and a SIGQUIT cleanup after the drain line.
Judged with the whole rule library, as `spectui check` does."""

import json
import subprocess
import sys
from pathlib import Path

REAL_STOP = """\
[2026-12-01 22:57:51] The server is fired up and ready to roll!
[2026-12-01 22:57:51] Decode batch, #running-req: 1, #token: 0, token usage: 0.00, accept len: 1.60, accept rate: 0.20, cpu graph: False, gen throughput (token/s): 4.13, #queue-req: 0
[2026-12-01 22:59:13] SIGTERM received. signum=None frame=None. Draining requests and shutting down...
[2026-12-01 22:59:14] Subprocess detokenizer (pid=27024) crashed with exit code -15. Triggering SIGQUIT for cleanup...
[2026-12-01 22:59:14] SIGQUIT received. signum=None, frame=None. It usually means one child failed.
[2026-12-01 22:59:14] Sleeping 5 seconds before crash diagnostics to let GPU activity settle.
[2026-12-01 22:59:19] No live scheduler processes found; skipping py-spy and CUDA coredump.
[2026-12-01 22:59:19] kill_process_tree called: parent_pid=26106, include_parent=True, pid=26106
"""
A_CRASH = """\
[2026-12-01 22:57:51] The server is fired up and ready to roll!
[2026-12-01 22:59:14] SIGQUIT received. signum=None, frame=None. It usually means one child failed.
[2026-12-01 22:59:19] kill_process_tree called: parent_pid=26106, include_parent=True, pid=26106
"""


def judge(tmp_path: Path, text: str) -> dict:
    log = tmp_path / "server.log"
    log.write_text(text)
    out = subprocess.run([sys.executable, "-m", "spectui.cli", "check", str(log), "--json"], capture_output=True,
                         text=True, timeout=120)
    return json.loads(out.stdout)


def test_a_sigterm_to_the_group_is_a_stop(tmp_path: Path) -> None:
    rep = judge(tmp_path, REAL_STOP)
    rules = {d["rule"] for d in rep["diagnoses"]}
    assert rep["phase"] == "stopped"
    assert "SRV004" in rules and not rules & {"CRASH001", "CRASH002"}, rules


def test_a_sigquit_without_a_sigterm_is_still_a_crash(tmp_path: Path) -> None:
    rep = judge(tmp_path, A_CRASH)
    rules = {d["rule"] for d in rep["diagnoses"]}
    assert rep["phase"] == "crashed" and "CRASH002" in rules and "SRV004" not in rules, rules
