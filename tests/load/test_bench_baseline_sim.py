"""`spectui bench --baseline` against the real simulator, started detached like a real server (its own
process group, its knobs in the environment) so ops.relaunch.run can stop and start it: the speculative command
runs again, healthy, when the command ends (pid changed twice, /server_info speculates), both results are in
history, and an interruption in the middle still restores it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from load_kit import free_port, wait_http

from spectui.cli import main
from spectui.ops.bench.run import bench_history_path

pytestmark = pytest.mark.timeout(120)

ARGS = ["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


@contextlib.contextmanager
def detached_sim(tmp: Path) -> Iterator[tuple[int, int]]:
    port = free_port()
    log = tmp / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *ARGS, "--port", str(port)], cwd=tmp,
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "SPECTUI_SIM_TIME_SCALE": "50"})
    started = [proc.pid]
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc, log=log)
        yield port, proc.pid
    finally:
        for pid in _sims_on(port) + started:  # whatever the relaunches left: ours, by its port
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGTERM)
        proc.wait(10)


def _sims_on(port: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (d / "cmdline").read_bytes().split(b"\0")
                if b"spectui.sim" in argv and str(port).encode() in argv:
                    out.append(int(d.name))
    return out


def server_info(port: int) -> dict:
    return httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=5, trust_env=False).json()


def test_baseline_relaunches_without_speculation_and_restores(tmp_path: Path, state: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with detached_sim(tmp_path) as (port, pid):
        code = main(["bench", "local", "--server-port", str(port), "--baseline", "--yes", "--requests", "8",
                     "--max-tokens", "32", "--json"])
        cap = capsys.readouterr()
        assert code == 0, cap.err
        out = json.loads(cap.out)
        run = out["baseline_run"]
        assert out["server"]["pid"] == pid
        base_pid, restored = run["baseline_pid"], run["restored"]
        assert base_pid not in (None, pid) and restored["pid"] not in (None, pid, base_pid)  # changed twice
        assert restored["healthy"] is True and restored["speculative_algorithm"] == "EAGLE3"
        assert out["server"]["now_pid"] == restored["pid"]  # the measured pid was stopped: which runs now
        info = server_info(port)
        assert info["speculative_algorithm"] == "EAGLE3"
        assert _sims_on(port) == [restored["pid"]]
        restored_argv = Path(f"/proc/{restored['pid']}/cmdline").read_bytes().decode().split("\0")[:-1]
        assert restored_argv == [sys.executable, "-m", "spectui.sim", *ARGS, "--port", str(port)]  # flags in order
        assert set(run["unset"]) == {a for a in ARGS if a.startswith("--speculative-")}
        base = out["baseline"]
        assert base["source"] == "measured" and base["output_tokens_per_s"] > 0
        assert base["per_request_tokens_per_s"]["mean"] > 0 and base["concurrency"] == 4
        assert run["baseline"]["spec"] is None and run["baseline"]["server"]["speculative"] is None
        assert out["speedup"]["output_tokens_per_s"] == pytest.approx(
            out["output_tokens_per_s"] / base["output_tokens_per_s"], rel=0.01)
        assert out["speedup"]["per_request_tokens_per_s"] is not None
        lines = [json.loads(x) for x in bench_history_path().read_text().splitlines()]
        assert len(lines) == 2  # both results recorded
        assert lines[0]["result"]["server"]["speculative"] is None and lines[0]["id"] == base["history_id"]
        assert lines[1]["result"]["baseline"]["source"] == "measured" and lines[1]["id"] == out["history_id"]
        assert lines[1]["draft"] == "d" and lines[0]["draft"] is None  # which draft an accept len belongs to


def test_interrupted_while_measuring_the_baseline_still_restores(tmp_path: Path, state: Path) -> None:
    from spectui.load import BenchConfig, load_prompts
    from spectui.ops.bench import baseline as bench_baseline
    from spectui.ops.bench.run import BenchPlan
    from spectui.sources.local import LocalHost

    with detached_sim(tmp_path) as (port, pid):
        async def go() -> tuple[str, list[str]]:
            host = LocalHost()
            await host.connect()
            plan = BenchPlan(BenchConfig("http://127.0.0.1", requests=400, concurrency=2, max_tokens=256),
                             load_prompts("mixed"), server_port=port)
            phases: list[str] = []
            task: asyncio.Task | None = None

            def phase(name: str) -> None:
                phases.append(name)
                if phases.count("measure") == 2 and task is not None:  # the baseline's window began
                    asyncio.get_running_loop().call_later(0.3, task.cancel)

            task = asyncio.ensure_future(bench_baseline.run(host, plan, on_phase=phase))
            try:
                await task
            except bench_baseline.BaselineInterrupted as exc:
                return str(exc), phases
            finally:
                await host.close()
            return "not interrupted", phases

        plan_small = asyncio.run(go())
        message, phases = plan_small
        assert "interrupted" in message and "runs again" in message, (message, phases)
        assert "restore" in phases
        assert server_info(port)["speculative_algorithm"] == "EAGLE3"
        (new_pid,) = _sims_on(port)
        assert new_pid != pid
        recorded = [json.loads(x) for x in bench_history_path().read_text().splitlines()]
        assert recorded[-1]["result"]["baseline"] is None  # no baseline figures from a cut window
