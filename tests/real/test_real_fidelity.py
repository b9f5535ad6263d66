"""The simulator held to the real server: both started with the same NGRAM command (`--device cpu` included),
the shapes compared — decode/prefill fields and their order, the start-up milestones and the server_args
line, /metrics names and labels, /server_info keys, /health during start-up, the child processes, what a
SIGTERM to the group does. The simulator runs as 0.5.18 (the first release whose NGRAM accepts the CPU, as
this 0.5.16 snapshot of the CPU backend's fork does; docs/SIMULATOR.md lists the differences kept)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from realkit import RealServer, alive, chat, free_port, get, group_members, model_dir, server_env

from spectui.core.log import DecodeSample, LogParser, Milestone, PrefillSample

FLAGS = ["--model-path", model_dir(), "--load-format", "dummy", "--device", "cpu", "--dtype", "bfloat16",
         "--host", "127.0.0.1", "--enable-metrics", "--speculative-algorithm", "NGRAM",
         "--speculative-num-draft-tokens", "4", "--disable-overlap-schedule", "--max-total-tokens", "8192",
         "--decode-log-interval", "5"]
# What spectui reads off /metrics (fleet, record, bench): every one must be where the real server has it.
READ_METRICS = ("num_running_reqs", "num_queue_reqs", "gen_throughput", "token_usage", "spec_accept_length",
                "spec_accept_rate", "spec_cap_length", "spec_block_accept_length", "spec_num_steps",
                "spec_num_draft_tokens", "max_total_num_tokens", "prompt_tokens", "generation_tokens",
                "num_requests", "spec_verify_calls")


class Started:
    def __init__(self, name: str, root: Path, argv: list[str], env: dict[str, str]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.name, self.root, self.log = name, root, root / "server.log"
        self.port = int(argv[argv.index("--port") + 1])
        self.health: list[int | None] = []
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self._poll = threading.Thread(target=self._watch_health, daemon=True)
        self._poll.start()

    def _watch_health(self) -> None:
        end = time.monotonic() + 300
        while time.monotonic() < end and self.proc.poll() is None:
            status = get(self.port, "/health", timeout=2)[0]
            if not self.health or self.health[-1] != status:
                self.health.append(status)
            if status == 200:
                return
            time.sleep(0.2)

    def ready(self, timeout: float = 300) -> None:
        self._poll.join(timeout)
        assert self.health and self.health[-1] == 200, (self.name, self.health, self.log.read_text()[-2000:])

    def records(self) -> list:
        parser = LogParser()
        text = self.log.read_text(errors="replace").splitlines()
        return [*parser.feed(text), *parser.finish()]

    def kill(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=15)
                return
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fidelity")
    real_argv = [str(Path(model_dir()).parents[1] / "venv" / "bin" / "python"), "-m", "sglang.launch_server",
                 *FLAGS, "--port", str(free_port())]
    env = server_env()
    env.update(SGLANG_USE_CPU_ENGINE="1", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1",
               LD_PRELOAD=str(Path(model_dir()).parents[1] / "venv" / "lib" / "libiomp5.so"),
               TVM_FFI_CACHE_DIR=str(Path(model_dir()).parents[1] / "tvm-ffi-cache"))
    sim_env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    sim_env.update(SPECTUI_SIM_SGLANG_VERSION="0.5.18", SPECTUI_SIM_TIME_SCALE="1")
    real = Started("real", root / "real", real_argv, env)
    sim = Started("sim", root / "sim", [sys.executable, "-m", "spectui.sim", *FLAGS, "--port", str(free_port())],
                  sim_env)
    try:
        real.ready()
        sim.ready()
        for s in (real, sim):
            for text in ("hello world the quick brown fox", "the quick brown fox jumps over the lazy dog"):
                chat(s.port, text, max_tokens=40)
        time.sleep(1.0)
        yield real, sim
    finally:
        real.kill()
        sim.kill()


def _fields(records: list, kind: type) -> list[str]:
    sample = next(r for r in records if isinstance(r, kind) and r.fields and "accept len" in r.fields or
                  isinstance(r, kind) and kind is PrefillSample)
    return list(sample.fields)


def test_decode_and_prefill_lines_have_the_same_fields_in_the_same_order(pair) -> None:
    real, sim = pair
    r, s = real.records(), sim.records()
    assert _fields(r, DecodeSample) == _fields(s, DecodeSample)  # `cpu graph`, accept rate, … in order
    assert "cpu graph" in _fields(r, DecodeSample)
    assert _fields(r, PrefillSample) == _fields(s, PrefillSample)


def test_start_up_milestones_and_the_server_args_line(pair) -> None:
    real, sim = pair
    wanted = ("server_args", "weights_begin", "weights_loaded", "kv_allocated", "memory_pool_end", "capacity",
              "uvicorn_up", "fired_up")

    def kinds(records: list) -> list[str]:
        seen = [str(r.kind) for r in records if isinstance(r, Milestone)]
        return [k for i, k in enumerate(seen) if k in wanted and k not in seen[:i]]

    assert kinds(real.records()) == kinds(sim.records())
    assert not [r for r in sim.records() if isinstance(r, Milestone) and str(r.kind).startswith("graph_capture")]
    for s in (real, sim):
        args = next(r for r in s.records() if isinstance(r, Milestone) and str(r.kind) == "server_args")
        assert "device='cpu'" in args.text and "speculative_num_draft_tokens=4" in args.text, s.name


def test_metrics_names_and_labels(pair) -> None:
    real, sim = pair

    def families(port: int) -> dict[str, set[str]]:
        status, text = get(port, "/metrics")
        assert status == 200
        out: dict[str, set[str]] = {}
        for fam in text_string_to_metric_families(text):
            for sample in fam.samples:
                out.setdefault(fam.name.removeprefix("sglang:"), set()).update(
                    k for k in sample.labels if k not in ("le", "quantile", "pid"))
        return out

    r, s = families(real.port), families(sim.port)
    for name in READ_METRICS:
        assert name in r, f"the real server has no {name}"
        assert name in s, f"the simulator lacks {name}"
        assert r[name] == s[name], (name, r[name], s[name])


def test_server_info_keys(pair) -> None:
    real, sim = pair

    def info(port: int) -> dict:
        status, body = get(port, "/server_info")
        assert status == 200
        return json.loads(body)

    r, s = info(real.port), info(sim.port)
    for key in ("version", "speculative_algorithm", "speculative_num_draft_tokens", "speculative_eagle_topk",
                "speculative_num_steps", "device", "internal_states"):
        assert key in r and key in s, key
    ri, si = r["internal_states"][0], s["internal_states"][0]
    for key in ("avg_spec_accept_length", "max_speculative_num_draft_tokens", "last_gen_throughput"):
        assert key in ri and key in si, key
    assert ri["max_speculative_num_draft_tokens"] == si["max_speculative_num_draft_tokens"] == 4
    assert r["speculative_eagle_topk"] == s["speculative_eagle_topk"] == 10  # NGRAM's silent topk


def test_health_during_start_up(pair) -> None:
    real, sim = pair
    # Refused before the HTTP server binds (None), then 503 until warm-up ends, then 200: both the same way.
    for s in (real, sim):
        assert s.health[-1] == 200 and 503 in s.health, (s.name, s.health)


def test_child_processes_and_sigterm_to_the_group(pair) -> None:
    real, sim = pair

    def titles(s: Started) -> set[str]:
        out = set()
        for pid in group_members(s.proc.pid):
            if pid != s.proc.pid:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
                out.add(argv0.split("_")[0] if argv0.startswith("sglang::") else "other")
        return out

    assert {"sglang::scheduler", "sglang::detokenizer"} <= titles(real)
    assert {"sglang::scheduler", "sglang::detokenizer"} <= titles(sim)
    for s in (real, sim):  # what relaunch's stop does: SIGTERM to the whole group; all of it leaves
        os.killpg(s.proc.pid, signal.SIGTERM)
    for s in (real, sim):
        end = time.monotonic() + 30
        while time.monotonic() < end and (alive(s.proc.pid) or group_members(s.proc.pid)):
            time.sleep(0.2)
        assert not group_members(s.proc.pid), (s.name, group_members(s.proc.pid))


def test_the_pair_is_judged_alike(pair, tmp_path: Path) -> None:
    """What spectui says of the two logs: the same phase and the same rules (the figures differ)."""
    real, sim = pair

    def said(s: Started) -> tuple[str, set[str]]:
        out = subprocess.run([sys.executable, "-m", "spectui.cli", "check", str(s.log), "--json"],
                             capture_output=True, text=True, timeout=120)
        rep = json.loads(out.stdout)
        # SPEC028 names the simulator; SRV004 reads the real server's SIGTERM-to-the-group lines, which the
        # simulator does not print (a difference kept: docs/SIMULATOR.md §3a). Both are stops.
        return rep["phase"], {d["rule"] for d in rep["diagnoses"] if d["rule"] not in ("SPEC028", "SRV004")}

    assert said(real) == said(sim)


_ = RealServer  # the module's servers are started by hand (the same argv for both)
