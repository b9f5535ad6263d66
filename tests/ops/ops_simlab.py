"""Helpers for relaunch tests: simulated SGLang servers started the way an operator starts them
(`setsid nohup python -m spectui.sim … > server.log 2>&1 &`), cleaned up by the process groups they made.

A uniquely named module (not `conftest`): test directories each have a conftest.py, so
`from conftest import …` would pick whichever was imported first."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from spectui.commands.demo.simrun import free_port as free_port  # re-exported for the tests

# The seed launch (/work/shared/seeds/002: EAGLE3, topk 1, 16 draft tokens, steps 1) on the simulator.
SEED_FLAGS = ["--model-path", "/models/kimi-k2.5-int4", "--speculative-algorithm", "EAGLE3",
              "--speculative-draft-model-path", "/data/eagle3/output_100k_sglang/4",
              "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
              "--speculative-num-steps", "1"]
# The simulator's knobs travel in its environment (SGLang's command line stays SGLang's): fast, some load.
SIM_FAST_ENV = {"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_TRAFFIC": "4"}


def health(port: int, timeout: float = 10) -> int | None:
    """/health's status, or None. 10 s: on a loaded CI machine (the real tier beside) 2 s was seen to expire."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as resp:
            return resp.status
    except Exception:
        return None


def wait_health(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while health(port) != 200:
        if time.monotonic() > deadline:
            raise TimeoutError(f"sim on port {port} not healthy within {timeout} s")
        time.sleep(0.1)


def proc_argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def alive(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0].startswith("Z")
    except FileNotFoundError:
        return False


@dataclass
class SimLab:
    """A working directory with a simulated server in it, and the process groups to clean up."""

    root: Path
    port: int
    pgids: set[int] = field(default_factory=set)

    def start(self, flags: list[str], log: str = "server.log", *, module: str = "spectui.sim",
              env: dict[str, str] | None = None) -> int:
        argv = [sys.executable, "-m", module, *flags, "--port", str(self.port)]
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
        out = subprocess.run(
            ["sh", "-c", 'cd "$1" && log=$2 && shift 2 && setsid nohup "$@" > "$log" 2>&1 < /dev/null & echo $!',
             "sh", str(self.root), log, *argv],
            capture_output=True, text=True, check=True, env={**inherited, **(env or {})})
        pid = int(out.stdout.strip())
        self.pgids.add(pid)
        return pid

    def servers_in_root(self) -> list[int]:
        """Live server processes whose cwd is this lab's directory (the servers relaunch started here); their
        `sglang::` children (the simulator has a scheduler and a detokenizer, as SGLang does) are not servers."""
        found = []
        for pid in self.processes_in_root():
            with contextlib.suppress(OSError):
                if not proc_argv(pid)[:1] or not proc_argv(pid)[0].startswith("sglang::"):
                    found.append(pid)
        return found

    def processes_in_root(self) -> list[int]:
        """Every live process whose cwd is this lab's directory (servers and their children)."""
        found = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(d / "cwd") == str(self.root) and alive(int(d.name)):
                        found.append(int(d.name))
        return found

    def cleanup(self) -> None:
        groups = set(self.pgids)
        for pid in self.processes_in_root():
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(pid))
        for pgid in groups:
            if pgid > 1 and pgid != os.getpgrp():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
