"""`spectui sweep --baseline` against the real simulator: the no-speculation baseline is measured once
(relaunch without --speculative-*, bench, restore), every ok config's speedup is against it (source
"measured"), the journal keeps it for a resume, and the original speculative command runs healthy at the end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SimLab, health, proc_argv, wait_health
from test_sweep_e2e import FAST, running, sweep

from spectui.core.launch import flag_values, parse_command
from spectui.ops.history import read_history

pytestmark = pytest.mark.timeout(60)


def flags(argv: list[str]) -> dict[str, str]:
    return flag_values(parse_command(argv))


def test_baseline_measured_once_every_config_against_it_and_the_original_back(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    original = proc_argv(pid)
    journal = tmp_path / "sweep.jsonl"
    done = sweep(pid, "--grid", "speculative-num-steps=1,3", "--baseline", "--journal", str(journal), "--json",
                 timeout=50)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    base = out["baseline"]
    assert base["source"] == "measured" and base["output_tokens_per_s"] > 0
    assert base["per_request_tokens_per_s"]["mean"] > 0 and base["concurrency"] == 2
    assert base["original"]["accept_len"] > 1.0  # the original command measured on the way
    oks = [c for c in out["configs"] if c["status"] == "ok"]
    assert len(oks) == 2 and out["launches"] == 2
    for c in oks:
        b = c["bench"]
        assert b["baseline"]["source"] == "measured" and b["baseline"]["history_id"] == base["history_id"]
        want = round(b["output_tokens_per_s"] / base["output_tokens_per_s"], 3)
        assert b["speedup"]["output_tokens_per_s"] == want
        assert b["speedup"]["per_request_tokens_per_s"] is not None
    assert "x the baseline" in out["why"]
    # History: the baseline's launch without speculation and its restore, 2 configs, the original back.
    hist = read_history()
    assert len(hist) == 5
    no_spec = [r for r in hist if "--speculative-algorithm" not in r.command]
    assert [r.id for r in no_spec] == [base["launch_id"]]
    bench_rows = [json.loads(x) for x in
                  (Path(os.environ["XDG_STATE_HOME"]) / "spectui" / "bench.jsonl").read_text().splitlines()]
    assert [r["id"] for r in bench_rows if r["result"]["server"]["speculative"] is None] == [base["history_id"]]
    # The original speculative command runs again, healthy (the flags the restore put back come last).
    assert out["applied"] == "original" and out["restore"]["healthy"]
    (now,) = running(lab)
    assert proc_argv(now) == original and health(lab.port) == 200  # the same command line, in its own order
    # A resume takes the baseline from the journal: nothing measured again, the same speedups.
    again = sweep(now, "--resume", str(journal), "--baseline", "--json", timeout=30)
    assert again.returncode == 0, again.stderr[-3000:]
    second = json.loads(again.stdout)
    assert second["launches"] == 0 and second["baseline"] == base and second["configs"] == out["configs"]
    assert len(read_history()) == 5 and running(lab) == [now]


def test_dry_run_with_baseline_counts_its_launches(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    done = sweep(pid, "--grid", "speculative-num-steps=1,3", "--baseline", "--dry-run", "--json", timeout=30)
    assert done.returncode == 0, done.stderr
    est = json.loads(done.stdout)["estimate"]
    assert est["baseline"] and est["launches"] == 2 + 1 + 2
    assert read_history() == [] and running(lab) == [pid]
