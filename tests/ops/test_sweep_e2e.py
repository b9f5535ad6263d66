"""`spectui sweep` end to end against the real simulator (started like an operator starts SGLang), small
grids at a high time scale: launches = distinct valid effective configs, refused ones never launched, an
injected fault (env:SPECTUI_SIM_FAULT) recorded with its cause while the sweep goes on, the best pick is the
best measured, the original (or with --apply-best the best) runs healthy at the end, --resume after SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SimLab, health, proc_argv, wait_health

from spectui.ops.history import read_history

FAST = {"SPECTUI_SIM_TIME_SCALE": "40"}
BENCH = ["--requests", "6", "--max-tokens", "48", "--concurrency", "2", "--health-timeout", "60",
         "--stop-timeout", "10", "--no-plot", "--yes"]
GRID = ["--grid", "speculative-num-steps=1,3", "--grid", "speculative-num-draft-tokens=2,8",
        "--grid", "speculative-eagle-topk=1,-", "--grid", "env:SPECTUI_SIM_FAULT=-,oom-at-capture"]


def sweep(pid: int, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "spectui.cli", "sweep", "local", "--pid", str(pid), *BENCH, *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def running(lab: SimLab) -> list[int]:
    return [p for p in lab.servers_in_root() if "spectui.sim" in " ".join(proc_argv(p))]


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_grid_collapses_skips_refused_records_a_crash_and_restores_the_original(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    original = proc_argv(pid)
    done = sweep(pid, *GRID, "--baseline-tps", "90", "--json", "--csv", str(tmp_path / "out.csv"))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    configs = out["configs"]
    assert len(configs) == 16
    by = {s: [i for i, c in enumerate(configs) if c["status"] == s] for s in ("ok", "failed", "duplicate", "skipped")}
    # 2 depths x 2 fault settings; topk absent is refused; draft tokens collapse at topk 1.
    assert len(by["ok"]) == 2 and len(by["failed"]) == 2 and len(by["skipped"]) == 8 and len(by["duplicate"]) == 4
    assert out["launches"] == 4
    for i in by["skipped"]:
        assert configs[i]["set"]["speculative-eagle-topk"] == "-"
        assert configs[i]["reason"].startswith("SGLang refuses it:") and "TypeError" in configs[i]["reason"]
    for i in by["duplicate"]:
        same = configs[configs[i]["same_as"]]
        assert same["effective"] == configs[i]["effective"] and configs[i]["set"]["speculative-num-draft-tokens"] == "8"
    for i in by["failed"]:
        c = configs[i]
        assert c["set"]["env:SPECTUI_SIM_FAULT"] == "oom-at-capture"
        rule = c["reason"].split(":")[0]
        assert any(d["rule"] == rule and d["evidence"] for d in c["diagnoses"]), c
    assert any(i > min(by["failed"]) for i in by["ok"])  # the sweep went on after a crash
    # History: one launch per distinct valid config (+1 putting the original back); none refused.
    hist = read_history()
    launched = [r for r in hist if r.id in {c["launch"]["history_id"] for c in configs if c.get("launch")}]
    assert len(launched) == 4 and len(hist) == 5
    assert all("--speculative-eagle-topk" in r.command for r in hist)
    bench_lines = (Path(os.environ["XDG_STATE_HOME"]) / "spectui" / "bench.jsonl").read_text().splitlines()
    assert {json.loads(x)["id"] for x in bench_lines} >= {configs[i]["bench"]["history_id"] for i in by["ok"]}
    # The best is the best measured.
    speeds = {i: configs[i]["bench"]["per_request_tokens_per_s"]["mean"] for i in by["ok"]}
    assert out["best"] == max(speeds, key=speeds.get)
    assert set(out["pareto"]) <= set(by["ok"]) and out["best"] in out["pareto"]
    assert configs[out["best"]]["bench"]["speedup"]["output_tokens_per_s"] is not None
    # The original command runs again, healthy.
    assert out["applied"] == "original" and out["restore"]["healthy"]
    (now,) = running(lab)
    assert proc_argv(now) == original and health(lab.port) == 200
    csv_text = (tmp_path / "out.csv").read_text()
    assert csv_text.startswith("config,") and csv_text.count("\n") == 17


def test_apply_best_leaves_the_best_running(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    done = sweep(pid, "--grid", "speculative-num-steps=1,3", "--apply-best", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["launches"] == 2 and out["applied"] == "best" and out["restore"]["healthy"]
    best = out["configs"][out["best"]]
    (now,) = running(lab)
    assert flag(proc_argv(now), "--speculative-num-steps") == best["set"]["speculative-num-steps"]
    assert health(lab.port) == 200


def test_dry_run_plans_and_launches_nothing(lab: SimLab) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    done = sweep(pid, *GRID, "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [c["status"] for c in out["configs"]].count("pending") == 4 and out["planned_launches"] == 4
    assert out["estimate"]["total_s"] > 0 and out["estimate"]["launches"] == 5
    assert read_history() == [] and running(lab) == [pid]
    human = sweep(pid, *GRID, "--dry-run")
    assert human.returncode == 0 and "4 launches" in human.stdout and "about" in human.stdout


def test_resume_after_sigint_skips_finished_configs_and_gives_the_same_table(lab: SimLab, tmp_path: Path) -> None:
    pid = lab.start(SEED_FLAGS, env=FAST)
    wait_health(lab.port)
    original = proc_argv(pid)
    journal = tmp_path / "sweep.jsonl"
    grid = ["--grid", "speculative-num-steps=1,2,3"]
    argv = [sys.executable, "-m", "spectui.cli", "sweep", "local", "--pid", str(pid), *BENCH, *grid,
            "--journal", str(journal), "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        lines = journal.read_text().splitlines() if journal.exists() else []
        if any(json.loads(x).get("type") == "config" for x in lines):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("no config finished")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    first = json.loads(stdout)
    assert first["interrupted"] and first["restore"]["healthy"], stderr[-2000:]
    done_before = [i for i, c in enumerate(first["configs"]) if c["status"] == "ok"]
    assert 1 <= len(done_before) < 3
    (now,) = running(lab)
    assert proc_argv(now) == original  # Ctrl-C put the original back
    resumed = sweep(now, "--resume", str(journal), "--json")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    second = json.loads(resumed.stdout)
    assert second["launches"] == 3 - len(done_before)
    for i in done_before:
        assert second["configs"][i] == first["configs"][i]  # not measured again
    assert [c["status"] for c in second["configs"]] == ["ok"] * 3
    (now,) = running(lab)
    again = sweep(now, "--resume", str(journal), "--json")
    third = json.loads(again.stdout)
    assert third["launches"] == 0 and third["configs"] == second["configs"] and third["best"] == second["best"]
    table_a = sweep(now, "--resume", str(journal)).stdout
    table_b = sweep(now, "--resume", str(journal)).stdout
    assert "sweep results" in table_a and table_a.split("applied:")[0] == table_b.split("applied:")[0]
