"""`spectui watch` of a server's log that is already long: the launch's server_args line is far above the
backfill, and its diagnoses still come out (the line is read as the launch header), with decode events
numbered as the file is. `--backfill 0` asks for nothing before now, header included.
Real simulator, real file, the CLI as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ops.ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, free_port, wait_health


def watch(log: Path, *extra: str) -> list[dict]:
    res = subprocess.run([sys.executable, "-m", "spectui", "watch", str(log), "--jsonl", "--duration", "4", *extra],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode in (0, 1), res.stderr  # 1: an error diagnosis was seen (CONTRACTS)
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_watch_of_a_long_log_reads_the_launch_header_and_numbers_lines_as_the_file(tmp_path: Path) -> None:
    lab = SimLab(tmp_path, free_port())
    try:
        lab.start(SEED_FLAGS, env={**SIM_FAST_ENV, "SPECTUI_SIM_TRAFFIC": "16"})
        wait_health(lab.port)
        log = lab.root / "server.log"
        end = time.monotonic() + 120
        while log.read_bytes().count(b"\n") < 800:
            assert time.monotonic() < end, "the simulator did not log enough lines"
            time.sleep(0.2)
    finally:
        lab.cleanup()  # the log stays; a stopped server's log is what many incidents start from
    lines = log.read_text().splitlines()
    args_line = next(n for n, t in enumerate(lines, 1) if "server_args=" in t)
    assert len(lines) - args_line > 500  # far above the default backfill (200 lines)

    got = watch(log)
    rules = {e["rule"] for e in got if e["type"] == "diagnosis"}
    # The seed's launch: speculation on and --max-running-requests not given; SGLang capped it (its own line).
    assert "SPEC009" in rules, got
    decodes = [e for e in got if e["type"] == "decode"]
    assert decodes and all("Decode batch" in lines[e["n"] - 1] for e in decodes)

    assert not [e for e in watch(log, "--backfill", "0") if e["type"] == "diagnosis"]
