"""`spectui watch --jsonl` on a real simulator: a `health` event on each change — healthy, unhealthy under
SIGSTOP (with the reason), healthy again after SIGCONT; a plain log file gets no health event at all."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402

pytestmark = pytest.mark.timeout(60)


class Watch:
    """`spectui watch` as a child; its JSON lines collected by a reader thread."""

    def __init__(self, *argv: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "spectui", "watch", *argv, "--jsonl"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def health(self) -> list[dict]:
        return [e for e in self.events if e["type"] == "health"]

    def wait(self, predicate, timeout: float = 15.0) -> float:
        began = time.monotonic()
        while not predicate():
            assert self.proc.poll() is None or predicate(), f"watch ended: {self.proc.stderr.read()[-500:]}"
            assert time.monotonic() - began < timeout, f"timed out; health events: {self.health()}"
            time.sleep(0.05)
        return time.monotonic() - began

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    return {**base, "SPECTUI_UNHEALTHY_AFTER": "3", "SPECTUI_HEALTH_INTERVAL": "0.5", **extra}


def test_watch_jsonl_health_events_through_sigstop_and_sigcont(tmp_path) -> None:
    lab = SimLab(tmp_path, free_port())
    pid = lab.start(["--model-path", "/models/llama"], env=SIM_FAST_ENV)
    watch = None
    try:
        wait_health(lab.port)
        watch = Watch("local", "--pid", str(pid), env=env())
        watch.wait(lambda: [e["state"] for e in watch.health()] == ["healthy"])
        os.kill(pid, signal.SIGSTOP)
        took = watch.wait(lambda: watch.health()[-1]["state"] == "unhealthy")
        assert took < 8
        bad = watch.health()[-1]
        assert "no /health answer for" in bad["reason"] and bad["pid"] == pid
        os.kill(pid, signal.SIGCONT)
        watch.wait(lambda: watch.health()[-1]["state"] == "healthy", timeout=10)
        states = [e["state"] for e in watch.health()]
        # one event per change of verdict, not one per probe
        assert states[0] == "healthy" and states[-1] == "healthy" and "unhealthy" in states
        assert len(states) <= 4, watch.health()
        os.kill(pid, signal.SIGTERM)
        watch.wait(lambda: watch.health()[-1]["state"] == "gone", timeout=15)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        if watch is not None:
            watch.stop()
        lab.cleanup()


def test_watch_of_a_plain_file_has_no_health_events(tmp_path) -> None:
    log = tmp_path / "old.log"
    log.write_text("[2026-01-01 10:00:00] Load weight begin. avail mem=78.50 GB\n")
    out = subprocess.run([sys.executable, "-m", "spectui", "watch", str(log), "--jsonl", "--duration", "3"],
                         capture_output=True, text=True, timeout=30, env=env())
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events and not [e for e in events if e["type"] == "health"]
