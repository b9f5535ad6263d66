"""The fleet test bed: the synthetic exporter (exporter.py) and a real Prometheus scraping it.

    with start_bed(1000, tmpdir) as bed:      # bed.url is Prometheus; bed.wait_scraped() first
        ...

Modes:
  "targets"   job "sglang": every instance is its own scrape target (`/metrics?target=ADDR` through
              relabelling, so `instance` is ADDR and each has its own `up`), plus the exporter's own
              /metrics as one more target of the same job (it exports no SGLang family). Job "prometheus":
              Prometheus scraping itself.
  "federated" job "sglang": one target, the exporter's `/metrics?all=1`, with `honor_labels: true`
              (the instances' series carry their own `instance`; the only `up` is the exporter's).
  "both"      both at once in one Prometheus: job "sglang" as in "targets", job "sglang-federated" as
              in "federated" (one Prometheus start for a test of both shapes).
Prometheus is started like tests/fleet/conftest.py starts it (same binary lookup, flags, readiness wait).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from exporter import address  # noqa: E402

PROMETHEUS = os.environ.get("SPECTUI_TEST_PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@dataclass
class Bed:
    n: int
    mode: str
    down_every: int
    exporter_port: int
    prometheus_port: int
    tmp: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    @property
    def exporter_instance(self) -> str:
        return f"127.0.0.1:{self.exporter_port}"

    @property
    def instances(self) -> list[str]:
        return [address(i) for i in range(self.n)]

    @property
    def down(self) -> list[str]:
        k = self.down_every
        return [address(i) for i in range(self.n) if k > 0 and i % k == k - 1]

    def query(self, expr: str, timeout: float = 30) -> list[dict]:
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=timeout)
        return r.json()["data"]["result"]

    def scalar(self, expr: str) -> float:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else 0.0

    def wait_scraped(self, timeout: float = 120, scrapes: int = 2) -> None:
        """Until every instance has been scraped (its `up`, or in federated mode its series) `scrapes` times."""
        up_expected = {"targets": self.n + 1, "federated": 1, "both": self.n + 2}[self.mode]
        live = (self.n - len(self.down)) * (2 if self.mode == "both" else 1)
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._alive()
            try:
                ups = self.scalar('count(up{job=~"sglang|sglang-federated"})')
                seen = self.scalar('count(count by (job, instance) '
                                   f'(count_over_time({{__name__=~"sglang[:_]num_running_reqs"}}[5m]) >= {scrapes}))')
                last = f"{ups:.0f}/{up_expected} targets, {seen:.0f}/{live} instances scraped {scrapes}x"
                if ups >= up_expected and seen >= live:
                    return
            except (httpx.HTTPError, KeyError, ValueError, IndexError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"fleet bed not scraped in {timeout:g}s: {last}\n{self.logs()}")

    def _alive(self) -> None:
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} exited {p.returncode}\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}"
                         for f in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        for p in reversed(self.procs):
            _stop(p)


def prometheus_config(bed: Bed, scrape_interval: float) -> str:
    interval = f"{scrape_interval:g}s"
    head = (f"global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n"
            f"  evaluation_interval: {interval}\nscrape_configs:\n")
    own = f"'127.0.0.1:{bed.exporter_port}'"
    job = ""
    if bed.mode in ("federated", "both"):
        name = "sglang" if bed.mode == "federated" else "sglang-federated"
        job = (f"  - job_name: {name}\n    honor_labels: true\n    params:\n      all: ['1']\n"
               f"    static_configs:\n      - targets: [{own}]\n")
    if bed.mode in ("targets", "both"):
        targets = ", ".join(f"'{a}'" for a in bed.instances)
        job += ("  - job_name: sglang\n    static_configs:\n"
               f"      - targets: [{targets}]\n      - targets: [{own}]\n"
               "    relabel_configs:\n"
               "      - source_labels: [__address__]\n        regex: '(10\\..+)'\n"
               "        target_label: __param_target\n"
               "      - source_labels: [__param_target]\n        regex: '(.+)'\n        target_label: instance\n"
               "      - source_labels: [__param_target]\n        regex: '.+'\n        target_label: __address__\n"
               f"        replacement: '127.0.0.1:{bed.exporter_port}'\n")
    prom = f"  - job_name: prometheus\n    static_configs:\n      - targets: ['127.0.0.1:{bed.prometheus_port}']\n"
    return head + job + prom


@contextlib.contextmanager
def start_bed(n: int, tmp: Path, *, mode: str = "targets", scrape_interval: float = 5.0,
              down_every: int = 200) -> Iterator[Bed]:
    if not os.access(PROMETHEUS, os.X_OK):
        raise RuntimeError(f"Prometheus is not installed ({PROMETHEUS}): apt-get install prometheus")
    if mode not in ("targets", "federated", "both"):
        raise ValueError(f"mode {mode!r}: targets, federated or both")
    tmp.mkdir(parents=True, exist_ok=True)
    bed = Bed(n, mode, down_every, 0, free_port(), tmp)
    try:
        with open(tmp / "exporter.log", "wb") as err:
            exp = subprocess.Popen([sys.executable, str(HERE / "exporter.py"), "--instances", str(n),
                                    "--down-every", str(down_every)], stdout=subprocess.PIPE, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        bed.procs.append(exp)
        assert exp.stdout is not None
        line = exp.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"exporter did not start: {line!r}\n{bed.logs()}")
        bed.exporter_port = int(line)
        config = tmp / "prometheus.yml"
        config.write_text(prometheus_config(bed, scrape_interval))
        with open(tmp / "prometheus.log", "wb") as log:
            prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                                     f"--web.listen-address=127.0.0.1:{bed.prometheus_port}", "--log.level=warn"],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        bed.procs.append(prom)
        deadline = time.monotonic() + 30
        while True:
            bed._alive()
            try:
                if httpx.get(f"{bed.url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Prometheus not ready in 30 s\n{bed.logs()}")
            time.sleep(0.2)
        yield bed
    finally:
        bed.stop()
