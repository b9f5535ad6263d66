"""The work behind `spectui demo --headless`: run the simulator, tail its log, print watch-style JSONL events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

from spectui.core.pipeline import Pipeline, PipelineUpdate
from spectui.core.records import DecodeSample
from spectui.sim.scenarios import Scenario
from spectui.sources.base import TailLines, TailState
from spectui.sources.local import LocalHost
from spectui.sources.tail import LogTail

SETTLE_S = 0.6  # after the simulator exits, how long the log must stay still before the demo ends
GRACE_S = 5.0  # SIGTERM -> SIGKILL grace for the simulator


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rule_engine(flags: list[str], version: str | None) -> Any:
    """The rule engine with the scenario's launch command, or None while the rules are not in this build."""
    try:
        from spectui.core.rules import RuleEngine, load_rules
    except ImportError:
        return None
    rules, _errors = load_rules()
    if not rules:
        return None
    from spectui.core.catalogue import pick_version
    from spectui.core.resolve import resolve

    ver = pick_version(version)[0]
    launch = None
    with contextlib.suppress(ImportError, ValueError):
        from spectui.core.launch import parse_command

        launch = parse_command(["python", "-m", "sglang.launch_server", *flags])
    return RuleEngine(rules, launch=launch, resolution=resolve(flags, ver), version=ver)


class DemoRun:
    def __init__(self, scenario: Scenario, *, version: str | None, time_scale: float, duration: float | None,
                 log_path: str | None, out: IO[str] | None = None) -> None:
        self.scenario, self.version, self.time_scale, self.duration = scenario, version, time_scale, duration
        self.log_path = log_path
        self.out = out or sys.stdout
        self.proc: subprocess.Popen[bytes] | None = None

    def _emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def _emit_update(self, update: PipelineUpdate) -> None:
        for rec in update.records:
            if type(rec) is DecodeSample:
                self._emit({"type": "decode", "n": rec.line, "accept_len": rec.accept_len,
                            "gen_tokens_per_s": rec.gen_tokens_per_s, "running_req": rec.running_req,
                            "queue_req": rec.queue_req})
        if update.phase_changed:
            self._emit({"type": "phase", "phase": update.snapshot.phase.value})
        for d in update.diagnoses:
            to_json = getattr(d, "to_json", None)
            self._emit({"type": "diagnosis", **(to_json() if to_json else d)})

    def start_sim(self) -> str:
        if self.log_path is None:
            fd, self.log_path = tempfile.mkstemp(prefix=f"spectui-demo-{self.scenario.name}-", suffix=".log")
            os.close(fd)
        argv = [sys.executable, "-m", "spectui.sim",
                *self.scenario.argv(host="127.0.0.1", port=free_port(), time_scale=self.time_scale)]
        if self.version:
            argv += ["--sim-sglang-version", self.version]
        with open(self.log_path, "wb") as log:
            # A new session: the simulator and anything it starts form one group that only we signal.
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        print(f"spectui demo: scenario {self.scenario.name} (pid {self.proc.pid}), log {self.log_path}",
              file=sys.stderr)
        return self.log_path

    def stop_sim(self) -> None:
        """SIGTERM the simulator's process group, SIGKILL it after a grace period. Only our own child."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        else:
            # The leader is gone; reap anything left in its group (the simulator forks nothing, but be sure).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def run(self) -> int:
        path = self.start_sim()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        pipe = Pipeline(engine=rule_engine(list(self.scenario.flags), self.version))
        tail = LogTail(LocalHost(read_only=True), path, from_start=True)
        last_data = time.monotonic()

        async def follow() -> None:
            nonlocal last_data
            async for ev in tail:
                if isinstance(ev, TailLines):
                    last_data = time.monotonic()
                    self._emit_update(pipe.feed_lines(ev.lines))
                elif isinstance(ev, TailState):
                    self._emit({"type": "connection", "state": ev.state.value})

        task = asyncio.create_task(follow())
        started = time.monotonic()
        try:
            while not stop.is_set() and not task.done():
                now = time.monotonic()
                if self.duration is not None and now - started >= self.duration:
                    break
                exited = self.proc is not None and self.proc.poll() is not None
                if exited and now - last_data >= SETTLE_S and tail.offset >= os.path.getsize(path):
                    break
                if now - last_data >= 0.5:
                    self._emit_update(pipe.flush())  # a traceback waiting for its end gets emitted when idle
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.1)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            self.stop_sim()
        self._emit_update(pipe.finish())
        return 0
