"""The work behind `spectui demo --headless`: run the simulator, tail its log, print watch-style JSONL events
(exit 1 when one of them is an error-severity diagnosis, as for watch)."""

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
import threading
import time
from typing import IO, Any

from spectui.sim.scenarios import Scenario
from spectui.sources.follow import follow, make_engine
from spectui.sources.local import LocalHost
from spectui.sources.tail import LogTail

SETTLE_S = 1.2  # after the simulator exits: quiet time covering the follower's idle flush (0.5 s)
GRACE_S = 5.0  # SIGTERM -> SIGKILL grace for the simulator
SIM_ENV_PREFIX = "SPECTUI_SIM_"  # the simulator's knob variables (spectui.sim.knobs)


def child_python() -> list[str]:
    """The interpreter for a child spectui process, isolated from the working directory: `-P` keeps the
    cwd (and a script's folder) off sys.path, so a `spectui/` folder where the user stands never runs
    instead of spectui. Its environment gets `own_pythonpath` so the child imports this very spectui."""
    return [sys.executable, "-P"]


def own_pythonpath(env: dict[str, str]) -> str:
    """PYTHONPATH for a child of `child_python`: the folder holding the running spectui package first
    (a checkout run without an install keeps working with -P), then what `env` had."""
    import spectui

    mine = os.path.dirname(os.path.dirname(os.path.abspath(spectui.__file__)))
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != mine]
    return os.pathsep.join([mine, *rest])


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class DemoRun:
    def __init__(self, scenario: Scenario, *, version: str | None, time_scale: float, duration: float | None,
                 log_path: str | None, out: IO[str] | None = None) -> None:
        self.scenario, self.version, self.time_scale, self.duration = scenario, version, time_scale, duration
        self.log_path = log_path
        self.out = out or sys.stdout
        self.proc: subprocess.Popen[bytes] | None = None
        self.sim_argv: list[str] = []  # the simulator's command line (SGLang's flags only), once started
        self.sim_env: dict[str, str] = {}  # its knobs: the SPECTUI_SIM_* variables of its environment
        self.errors = 0  # error-severity diagnoses emitted: the exit code is 1 when there was one

    def _emit(self, event: dict[str, Any]) -> None:
        if event.get("type") == "diagnosis" and event.get("severity") == "error":
            self.errors += 1
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def start_sim(self) -> str:
        if self.log_path is None:
            fd, self.log_path = tempfile.mkstemp(prefix=f"spectui-demo-{self.scenario.name}-", suffix=".log")
            os.close(fd)
        argv = [*child_python(), "-m", "spectui.sim", *self.scenario.argv(host="127.0.0.1", port=free_port())]
        self.sim_argv = argv
        # The knobs travel in the environment (a relaunch carries it over); SGLang's command line stays
        # SGLang's. Knob variables inherited from the caller are dropped: the scenario is the whole situation.
        self.sim_env = self.scenario.env(time_scale=self.time_scale, version=self.version)
        env = {k: v for k, v in os.environ.items() if not k.startswith(SIM_ENV_PREFIX)}
        env["PYTHONPATH"] = own_pythonpath(env)
        with open(self.log_path, "wb") as log:
            # A new session: the simulator and anything it starts form one group that only we signal.
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, env={**env, **self.sim_env})
        # Reaped as soon as it exits (a scenario that crashes at start-up): never a zombie that still looks
        # like a process to discovery and to a relaunch ("it runs: " nothing).
        threading.Thread(target=self.proc.wait, name="spectui-demo-reaper", daemon=True).start()
        print(f"spectui demo: scenario {self.scenario.name} (pid {self.proc.pid}), log {self.log_path}",
              file=sys.stderr)
        return self.log_path

    def launch(self) -> Any:
        """The simulator's launch as core.launch reads it: its knob variables as the command's environment
        assignments, then SGLang's command line (what the cockpit shows and edits)."""
        import dataclasses

        from spectui.core.launch import parse_command

        return dataclasses.replace(parse_command(self.sim_argv), env=tuple(self.sim_env.items()))

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
        # A leader already reaped is not signalled: its pid (and so the group id) may belong to another
        # process by now, and the simulator forks nothing that could outlive it.

    async def run(self) -> int:
        from spectui.core.launch import pick_version

        path = self.start_sim()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        # The launch is the simulator's own command line (core.launch reads it like SGLang's); its
        # no-speculation speed is the baseline the slower-than-baseline rule needs.
        engine = make_engine(self.sim_argv, version=pick_version(self.version)[0],
                             baseline_tps=self.scenario.sim_knobs(time_scale=self.time_scale).client_baseline_tps)
        tail = LogTail(LocalHost(read_only=True), path, from_start=True)
        last_event = time.monotonic()

        async def pump() -> None:
            nonlocal last_event
            async for ev in follow(tail.host, path, engine=engine, tail=tail):
                last_event = time.monotonic()
                self._emit(ev)

        task = asyncio.create_task(pump())
        started = time.monotonic()
        try:
            while not stop.is_set() and not task.done():
                now = time.monotonic()
                if self.duration is not None and now - started >= self.duration:
                    break
                exited = self.proc is not None and self.proc.poll() is not None
                # After the simulator is gone: end once the tail has read everything and the follower's
                # idle flush (a traceback waiting for its end) has had time to run.
                if exited and tail.offset >= os.path.getsize(path) and now - last_event >= SETTLE_S:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.1)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            self.stop_sim()
        if task.done() and not task.cancelled() and task.exception() is not None:
            print(f"spectui demo: following the log failed: {task.exception()}", file=sys.stderr)
            return 1
        # Like watch and check: an error-severity diagnosis is exit 1 (docs/CONTRACTS.md, exit codes).
        return 1 if self.errors else 0
