"""`spectui bench` end to end against the real simulator (a subprocess logging to a file, so discovery
finds its log): the contract's keys, tokens / window, the accept length over the window from each source
agreeing with the simulator's own Decode lines in that window, baselines, history, bad input."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from load_kit import SPEC_ARGS, free_port, wait_http

from spectui.cli import main
from spectui.ops.bench.run import bench_history_path, log_accept

pytestmark = pytest.mark.timeout(60)

CONTRACT_KEYS = {"server", "workload", "requests", "duration_s", "output_tokens", "output_tokens_per_s",
                 "per_request_tokens_per_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "spec", "baseline",
                 "speedup", "history_id"}


@dataclass
class Sim:
    port: int
    pid: int
    log: Path


@contextlib.contextmanager
def sim_with_log(tmp: Path, *extra: str) -> Iterator[Sim]:
    port = free_port()
    log = tmp / f"sim-{port}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *SPEC_ARGS, "--port", str(port),
                                 "--decode-log-interval", "8", *extra], stdout=fh, stderr=fh)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc)
        yield Sim(port, proc.pid, log)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_with_log(tmp_path_factory.mktemp("sim")) as s:
        yield s


@pytest.fixture(scope="module")
def sim_counters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_with_log(tmp_path_factory.mktemp("simc"), "--sim-spec-counters", "1") as s:
        yield s


@pytest.fixture(scope="module")
def sim_old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_with_log(tmp_path_factory.mktemp("simo"), "--sim-sglang-version", "0.5.3") as s:
        yield s


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def bench(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict | None, str]:
    code = main(["bench", "local", *argv])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if cap.out.strip().startswith("{") else None), cap.err


def window_log_accept(s: Sim, run) -> tuple[dict, float]:  # type: ignore[no-untyped-def]
    """Run the bench; the mean accept len of the Decode lines the sim logged while it ran (warm-up 0)."""
    before = s.log.stat().st_size
    out = run()
    data = s.log.read_bytes()[before:]
    length, lines = log_accept(data)
    assert length is not None and lines >= 3
    return out, length


def check_common(out: dict) -> None:
    assert set(out) >= CONTRACT_KEYS
    assert out["requests"] == {"ok": 16, "failed": 0, "errors": {}, "not_sent": 0, "cancelled": 0}
    assert out["output_tokens"] == 16 * 64  # the sim always generates max_tokens
    assert out["output_tokens_per_s"] == pytest.approx(out["output_tokens"] / out["duration_s"], rel=2e-3)
    w = out["workload"]
    assert (w["prompts"], w["requests"], w["concurrency"], w["max_tokens"], w["temperature"]) == ("mixed", 16, 4, 64, 0.0)
    assert out["server"]["speculative"] == {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3,
                                            "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4}
    assert out["server"]["sglang_version"]
    assert out["baseline"] is None and out["speedup"] is None
    assert all(out[k]["p50"] is not None for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"))


ARGS = ("--requests", "16", "--concurrency", "4", "--max-tokens", "64", "--warmup", "0", "--json")


def test_bench_per_request_source_agrees_with_decode_lines(sim: Sim, capsys, state: Path) -> None:
    out, from_log = window_log_accept(sim, lambda: bench(capsys, "--server-port", str(sim.port), *ARGS))
    code, out, err = out
    assert code == 0, err
    check_common(out)
    assert out["server"]["pid"] == sim.pid  # found by its port
    spec = out["spec"]
    assert spec["source"] == "per_request" and spec["identities_ok"] is True
    assert spec["accept_len"] == pytest.approx(from_log, rel=0.03)
    rec = [json.loads(x) for x in bench_history_path(state / "spectui" / "history.jsonl").read_text().splitlines()]
    assert rec[-1]["id"] == out["history_id"] and rec[-1]["host"] == "local"


def test_bench_counter_source_with_pid(sim_counters: Sim, capsys) -> None:
    out, from_log = window_log_accept(sim_counters, lambda: bench(capsys, "--pid", str(sim_counters.pid), *ARGS))
    code, out, err = out
    assert code == 0, err
    check_common(out)
    assert out["spec"]["source"] == "server_info_counters" and out["spec"]["identities_ok"] is True
    assert out["spec"]["accept_len"] == pytest.approx(from_log, rel=0.03)


def test_bench_log_source_on_a_release_without_request_fields(sim_old: Sim, capsys) -> None:
    out, from_log = window_log_accept(sim_old, lambda: bench(capsys, "--pid", str(sim_old.pid), *ARGS))
    code, out, err = out
    assert code == 0, err
    assert out["spec"]["source"] == "log" and out["spec"]["identities_ok"] is None
    assert out["spec"]["accept_len"] == pytest.approx(from_log, rel=1e-3)


def test_bench_given_and_history_baseline(sim: Sim, capsys, state: Path) -> None:
    code, out, err = bench(capsys, "--server-port", str(sim.port), *ARGS, "--baseline-tps", "90")
    assert code == 0, err
    assert out["baseline"]["source"] == "given" and out["baseline"]["output_tokens_per_s"] == 90
    assert out["speedup"]["output_tokens_per_s"] == pytest.approx(out["output_tokens_per_s"] / 90, rel=1e-3)
    assert "per_request_tokens_per_s" in out["speedup"]
    # a bench of the same workload with speculation off, as history holds it
    path = bench_history_path(state / "spectui" / "history.jsonl")
    last = json.loads(path.read_text().splitlines()[-1])
    last["id"], last["result"]["server"]["speculative"] = "plain", None
    last["result"]["output_tokens_per_s"], last["result"]["per_request_tokens_per_s"]["mean"] = 1000.0, 100.0
    with open(path, "a") as fh:
        fh.write(json.dumps(last) + "\n")
    code, out, err = bench(capsys, "--server-port", str(sim.port), *ARGS)
    assert code == 0, err
    assert out["baseline"]["source"] == "history" and out["baseline"]["output_tokens_per_s"] == 1000.0
    assert out["speedup"]["output_tokens_per_s"] == pytest.approx(out["output_tokens_per_s"] / 1000, rel=1e-3)
    assert out["speedup"]["per_request_tokens_per_s"] == pytest.approx(
        out["per_request_tokens_per_s"]["mean"] / 100, rel=1e-3)


def test_bench_bad_prompts_file_is_exit_2_one_line(sim: Sim, capsys, tmp_path: Path) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"prompt": "hi"}\n{"nope": 1\n')
    code, out, err = bench(capsys, "--server-port", str(sim.port), "--prompts", str(bad), "--json")
    assert code == 2 and out is None
    assert len(err.strip().splitlines()) == 1 and "p.jsonl" in err


def test_bench_unreachable_port_and_baseline_flag_are_exit_2(capsys) -> None:
    code, out, err = bench(capsys, "--server-port", str(free_port()), "--requests", "2", "--json")
    assert code == 2 and out is None and len(err.strip().splitlines()) == 1 and "--server-port" in err
    code, out, err = bench(capsys, "--server-port", str(free_port()), "--baseline", "--yes")
    assert code == 2 and "--server-port" in err and len(err.strip().splitlines()) == 1  # nothing relaunched
