"""The simulated server's child processes, named as SGLang names its own (setproctitle):
`sglang::scheduler` and `sglang::detokenizer`, in the launcher's process group (the real CPU server's tree:
shared/real-sglang). They do no work: they exist so that what acts on a server's process group — relaunch's
stop, the liveness probe, discovery that must list the launcher and not its children — meets the tree a real
server has. Each leaves when the launcher is gone (reparented) or on SIGTERM (the default action, as the
real children die from a signal to the group)."""

from __future__ import annotations

import contextlib
import subprocess
import sys

NAMES = ("sglang::scheduler", "sglang::detokenizer")
_CODE = "import os, time\nppid = os.getppid()\nwhile os.getppid() == ppid:\n    time.sleep(0.5)\n"


_LIVE: list[subprocess.Popen[bytes]] = []  # this process's children, for kill_all at a "kill_process_tree"


def kill_all() -> None:
    """SIGKILL every child now (SGLang's kill_process_tree takes the children with it)."""
    for child in _LIVE:
        with contextlib.suppress(OSError):
            child.kill()
    for child in _LIVE:  # reaped here: no zombie outlives the launcher in its group
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            child.wait(timeout=1)


def spawn() -> list[subprocess.Popen[bytes]]:
    """The children, started now (argv[0] is the SGLang title; the interpreter runs `_CODE` with -I)."""
    out = _LIVE
    for name in NAMES:
        out.append(subprocess.Popen([name, "-I", "-c", _CODE], executable=sys.executable,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    close_fds=True))
    return out


def stop(children: list[subprocess.Popen[bytes]]) -> None:
    """kill_process_tree's end: the children go with the launcher."""
    for child in children:
        if child.poll() is None:
            child.kill()
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=2)
