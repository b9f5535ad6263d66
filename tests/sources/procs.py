"""Real processes for discovery tests: a stub `python -m sglang.launch_server`, the simulator, a renamed child."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from spectui.commands.demo.simrun import free_port as free_port  # re-exported for the tests

STUB = "import sys, time\nprint('stub server up', flush=True)\nprint('on stderr', file=sys.stderr, flush=True)\ntime.sleep(120)\n"


@contextlib.contextmanager
def started(argv: list[str], log: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None
            ) -> Iterator[subprocess.Popen[bytes]]:
    """Start argv in its own process group with stdout+stderr to `log`; stop exactly that group after."""
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                                env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def stub_sglang(root: Path) -> list[str]:
    """argv of a real `python -m sglang.launch_server` whose module is a stub that only sleeps."""
    pkg = root / "stubpath" / "sglang"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(STUB)
    return [sys.executable, "-m", "sglang.launch_server", "--model-path", "/m", "--port", "31234"]


def wait_for_text(path: Path, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{text!r} not in {path} after {timeout} s")
        time.sleep(0.02)
