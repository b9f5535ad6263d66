"""`spectui advise local --pid P`: observations from the bench history of that server only (its port, its
draft), plus its live log; a host runs several servers and the same port may later serve another draft."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, wait_health

DRAFT = SEED_FLAGS[SEED_FLAGS.index("--speculative-draft-model-path") + 1]


def bench_line(port: int, steps: int, accept_len: float, draft: str | None) -> dict:
    result = {"server": {"port": port, "speculative": {"speculative_algorithm": "EAGLE3",
                                                       "speculative_num_steps": steps, "speculative_eagle_topk": 1}},
              "spec": {"accept_len": accept_len}, "per_request_tokens_per_s": {"mean": 80.0},
              "workload": {"concurrency": 4}, "baseline": None}
    line = {"id": f"b{port}{steps}", "time": "2026-12-01T10:00:00Z", "host": "local", "pid": 1, "port": port,
            "model": "/models/kimi-k2.5-int4", "result": result}
    if draft is not None:
        line["draft"] = draft
    return line


def test_only_this_servers_bench_results_count(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    state = Path(os.environ["XDG_STATE_HOME"]) / "spectui"
    state.mkdir(parents=True)
    lines = [bench_line(lab.port, 3, 2.7, DRAFT),        # this server
             bench_line(lab.port, 4, 3.1, None),         # this port, recorded before drafts were
             bench_line(lab.port + 1, 5, 1.3, DRAFT),    # another server on the host
             bench_line(lab.port, 2, 1.2, "/other/draft")]  # this port, another draft
    (state / "bench.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    log = lab.root / "server.log"
    deadline = time.monotonic() + 30
    while "accept len" not in log.read_text(errors="replace"):  # a Decode line for the live observation
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    done = subprocess.run([sys.executable, "-m", "spectui.cli", "advise", "local", "--pid", str(pid), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)["model"]["observations"]
    assert sorted(s for s, _ in seen) == [1, 3, 4], seen  # live steps 1, and the two results of this server
    human = subprocess.run([sys.executable, "-m", "spectui.cli", "advise", "local", "--pid", str(pid)],
                           capture_output=True, text=True, timeout=60)
    assert f"port {lab.port}, draft {DRAFT}): 2 results" in " ".join(human.stdout.split()), human.stdout
