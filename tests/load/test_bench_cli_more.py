"""`spectui bench` end to end against the real simulator: --output-file lines beside bench_serving's, the
random workload with --ignore-eos, Ctrl-C (a real SIGINT to a real process) keeping what completed, and
--baseline asking before it restarts anything."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from load_kit import SPEC_ARGS, free_port, wait_http

from spectui.cli import main
from spectui.ops.bench.run import bench_history_path

pytestmark = pytest.mark.timeout(60)


@contextlib.contextmanager
def sim(tmp: Path, scale: str = "50") -> Iterator[tuple[int, int]]:
    port = free_port()
    args = [a if a != "50" else scale for a in SPEC_ARGS]
    with open(tmp / "sim.log", "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *args, "--port", str(port)],
                                stdout=fh, stderr=fh)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc)
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with sim(tmp_path_factory.mktemp("sim")) as (p, _):
        yield p


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_random_workload_and_output_file_lines(port: int, tmp_path: Path, capsys) -> None:
    out_file = tmp_path / "runs.jsonl"
    argv = ["bench", "local", "--server-port", str(port), "--dataset-name", "random", "--random-input-len", "30",
            "--random-output-len", "12", "--random-range-ratio", "1", "--ignore-eos", "--num-prompts", "6",
            "--max-concurrency", "3", "--output-file", str(out_file), "--goodput", "ttft:60000", "e2e:60000"]
    assert main([*argv, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["output_tokens"] == 6 * 12  # every request's max_tokens is the drawn output length
    assert first["workload"]["ignore_eos"] is True and first["workload"]["prompts"] == "random:30:12:1"
    assert first["goodput"]["slo_attainment"] == 1.0 and first["goodput"]["goodput_slos_ms"] == {
        "ttft": 60000.0, "e2el": 60000.0}
    assert first["concurrency"] > 0 and first["requests_per_s"] > 0 and first["input_tokens"] > 0
    assert main([*argv, "--output-details"]) == 0
    table = capsys.readouterr().out
    assert "ITL ms (per token)" in table and "chunk gap ms" in table and "mean concurrency" in table
    lines = [json.loads(x) for x in out_file.read_text().splitlines()]
    assert len(lines) == 2  # appended
    a, b = lines
    assert a["backend"] == "spectui" and a["dataset_name"] == "random" and a["random_output_len"] == 12
    assert a["total_output_tokens"] == 72 and a["completed"] == 6 and a["max_concurrency"] == 3
    assert a["median_itl_ms"] == a["spectui"]["itl_ms"]["p50"] and a["accept_length"] is not None
    assert "itls" not in a and len(b["itls"]) == 6 and b["output_lens"] == [12] * 6
    assert all(isinstance(x, float) for per in b["itls"] for x in per) and all(t > 0 for t in b["ttfts"])


def test_shared_prefix_sends_every_prompt_of_the_set(port: int, capsys) -> None:
    assert main(["bench", "local", "--server-port", str(port), "--dataset-name", "generated-shared-prefix",
                 "--gsp-num-groups", "2", "--gsp-prompts-per-group", "3", "--gsp-system-prompt-len", "40",
                 "--gsp-question-len", "5", "--gsp-output-len", "8", "--warmup", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["workload"]["requests"] == 6 and out["requests"]["ok"] == 6 and out["output_tokens"] == 6 * 8
    assert out["workload"]["prompts"] == "generated-shared-prefix:2x3:40+5:8"


def test_ctrl_c_keeps_and_records_what_completed(tmp_path: Path, state: Path) -> None:
    with sim(tmp_path, scale="5") as (p, _):
        env = {**os.environ, "XDG_STATE_HOME": str(state)}
        proc = subprocess.Popen([sys.executable, "-m", "spectui", "bench", "local", "--server-port", str(p),
                                 "--requests", "400", "--concurrency", "2", "--max-tokens", "16", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        path = bench_history_path(state / "spectui" / "history.jsonl")
        log = tmp_path / "sim.log"
        deadline = time.monotonic() + 30
        while log.read_bytes().count(b"POST /v1/") < 10 and time.monotonic() < deadline:
            time.sleep(0.05)  # the warm-up, then a few requests of the window (the access log says)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    res = json.loads(out)
    assert res["interrupted"] is True and 0 < res["requests"]["ok"] < 400, err
    assert "interrupted" in err and res["history_id"] in err
    recorded = json.loads(path.read_text().splitlines()[-1])
    assert recorded["id"] == res["history_id"] and recorded["result"]["interrupted"] is True
    assert recorded["result"]["requests"]["ok"] == res["requests"]["ok"]


def test_baseline_without_a_terminal_or_yes_is_refused(port: int, capsys) -> None:
    code = main(["bench", "local", "--server-port", str(port), "--baseline", "--requests", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--yes" in err


def test_baseline_shows_the_plan_and_a_no_changes_nothing(tmp_path: Path, capsys,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with sim(tmp_path) as (p, pid):
        monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
        asked: list[str] = []
        monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or "n")
        code = main(["bench", "local", "--server-port", str(p), "--baseline", "--requests", "2"])
        err = capsys.readouterr().err
        assert code == 1 and "not confirmed; nothing was changed" in err
        assert asked and f"pid {pid}" in err and "RESTART it without --speculative-" in err
        assert "--speculative-num-draft-tokens" in err
        with open(f"/proc/{pid}/cmdline", "rb") as fh:  # the same server still runs
            assert b"spectui.sim" in fh.read()
        assert not bench_history_path().exists()  # nothing measured either
