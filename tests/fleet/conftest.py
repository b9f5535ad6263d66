"""A real Prometheus (/usr/bin/prometheus; Debian's `prometheus` package in CI) scraping three real
simulators (`python -m spectui.sim ... --enable-metrics`) every second, started once per test module.

Targets of job "sglang": a healthy EAGLE3 server (0.5.23), a low-acceptance one (--sim-alpha 0.2, on
0.5.6, which exports no spec_num_steps), one without speculation, and a port nobody listens on (down).
Job "prometheus" is Prometheus itself (not SGLang). Every process is killed in a finalizer.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

PROMETHEUS = os.environ.get("SPECTUI_TEST_PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"
TARGET = ["--model-path", "/models/meta-llama/Llama-3.1-8B-Instruct"]
EAGLE3 = [*TARGET, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/draft",
          "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
LOAD = ["--enable-metrics", "--sim-time-scale", "20", "--sim-traffic", "4"]
ACCEPT_RE = re.compile(r"Decode batch.*?accept len: ([0-9.]+)")
DECODE_RE = re.compile(r"Decode batch")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.port}"

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def accept_lens(self) -> list[float]:
        """The accept len of every decode line in the simulator's own log (our regex, not spectui's parser)."""
        return [float(m.group(1)) for m in ACCEPT_RE.finditer(self.text())]

    def decode_lines(self) -> int:
        return len(DECODE_RE.findall(self.text()))

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def _spawn(name: str, argv: list[str], log: Path, port: int) -> Proc:
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    return Proc(name, proc, port, log)


@dataclass
class Fleet:
    prometheus: Proc
    sims: dict[str, Proc]
    dead_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus.port}"

    def query(self, expr: str) -> list[dict]:
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=5)
        return r.json()["data"]["result"]


def _wait(what: str, ok, timeout: float, procs: list[Proc]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            if p.proc.poll() is not None:
                raise AssertionError(f"{p.name} exited {p.proc.returncode}:\n{p.text()[-2000:]}")
        try:
            if ok():
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}:\n" + "\n".join(f"--- {p.name}\n{p.text()[-1500:]}"
                                                                      for p in procs))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.fail(f"Prometheus is not installed ({PROMETHEUS}): apt-get install prometheus")
    tmp = tmp_path_factory.mktemp("fleet")
    started: list[Proc] = []
    try:
        specs = {
            "healthy": [*EAGLE3, *LOAD, "--sim-concurrency", "8", "--sim-seed", "1"],  # a client that waits: no queue
            "low": [*EAGLE3, *LOAD, "--sim-alpha", "0.2", "--sim-sglang-version", "0.5.6", "--sim-seed", "2"],
            "nospec": [*TARGET, *LOAD, "--sim-seed", "3"],
        }
        sims: dict[str, Proc] = {}
        for name, args in specs.items():
            port = free_port()
            sims[name] = _spawn(name, [sys.executable, "-m", "spectui.sim", *args, "--port", str(port)],
                                tmp / f"{name}.log", port)
            started.append(sims[name])
        dead_port = free_port()  # nothing listens here: a down SGLang target
        prom_port = free_port()
        targets = ", ".join(f"'127.0.0.1:{p}'" for p in [*(s.port for s in sims.values()), dead_port])
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            f"  - job_name: sglang\n    static_configs:\n      - targets: [{targets}]\n"
            f"  - job_name: prometheus\n    static_configs:\n      - targets: ['127.0.0.1:{prom_port}']\n")
        prom = _spawn("prometheus", [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                                     f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
                      tmp / "prometheus.log", prom_port)
        started.append(prom)
        f = Fleet(prom, sims, dead_port)
        all_procs = [*sims.values(), prom]
        _wait("Prometheus ready", lambda: httpx.get(f"{f.url}/-/ready", timeout=1).status_code == 200, 20, all_procs)

        def scraped() -> bool:
            up = {r["metric"]["instance"]: r["value"][1] for r in f.query('up{job="sglang"}')}
            tps = {r["metric"]["instance"]: float(r["value"][1]) for r in f.query("sglang:gen_throughput")}
            return (all(up.get(s.instance) == "1" and tps.get(s.instance, 0) > 0 for s in sims.values())
                    and up.get(f"127.0.0.1:{dead_port}") == "0")

        _wait("all three simulators scraped with throughput", scraped, 30, all_procs)
        time.sleep(2.5)  # a few more scrapes: queues build, several decode lines per scrape
        yield f
    finally:
        for p in reversed(started):
            p.stop()
