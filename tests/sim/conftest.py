"""Start the simulator as a real process (`python -m spectui.sim`) on a free port, and always stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from spectui.commands.demo.simrun import free_port

TARGET = ["--model-path", "/models/meta-llama/Llama-3.1-8B-Instruct"]
EAGLE3 = [*TARGET, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/draft"]
CHAIN3 = ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
FAST = ["--sim-time-scale", "50"]


@dataclass
class Sim:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def text(self) -> str:
        return self.log.read_text()

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"simulator exited {self.proc.returncode}:\n{self.text()[-3000:]}")
            if "The server is fired up and ready to roll!" in self.text():
                return
            time.sleep(0.05)
        raise AssertionError("simulator did not become ready:\n" + self.text()[-3000:])

    def wait_for(self, needle: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never appeared:\n{self.text()[-3000:]}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30.0)


def start_sim(args: list[str], log: Path, port: int | None = None, env: dict[str, str] | None = None) -> Sim:
    port = port or free_port()
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *args, "--port", str(port)],
                                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **(env or {})})
    return Sim(proc, port, log)


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator:
    started: list[Sim] = []

    def make(args: list[str], name: str = "server.log", **kw) -> Sim:
        sim = start_sim(args, tmp_path / name, **kw)
        started.append(sim)
        return sim

    yield make
    for sim in started:
        if sim.proc.poll() is None:
            os.killpg(sim.proc.pid, signal.SIGKILL)
            sim.proc.wait(10)


def run_sim(args: list[str], timeout: float = 30.0, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Run the simulator to completion (for launches that fail before serving); `env` adds variables."""
    return subprocess.run([sys.executable, "-m", "spectui.sim", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
