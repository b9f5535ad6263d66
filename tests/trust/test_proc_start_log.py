"""The detached start creates the new log and opens it once (O_CREAT|O_EXCL through `set -C`), and the
server writes to that very descriptor: a symlink planted at the log's name in a shared log folder is never
followed, an existing file never reused, and the server's output goes to the file the start created."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from spectui.errors import RelaunchError
from spectui.ops import procs
from spectui.sources.local import LocalHost

SLEEPER = "import sys, time; print('up', flush=True); time.sleep(60)"
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


async def test_a_planted_symlink_at_the_log_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    log = tmp_path / "shared" / "server-new.log"
    log.parent.mkdir()
    log.symlink_to(victim)  # dangling: an O_CREAT that follows it would create the victim
    with pytest.raises(RelaunchError, match="log file not creatable"):
        await procs.start_detached(LocalHost(), str(tmp_path), str(log), ENV, [sys.executable, "-c", SLEEPER])
    assert not victim.exists() and log.is_symlink()
    victim.write_text("precious\n")  # a symlink to an existing file: refused too, the file untouched
    with pytest.raises(RelaunchError, match="log file not creatable"):
        await procs.start_detached(LocalHost(), str(tmp_path), str(log), ENV, [sys.executable, "-c", SLEEPER])
    assert victim.read_text() == "precious\n"


async def test_swapping_the_new_log_for_a_symlink_right_after_it_appears_changes_nothing(tmp_path: Path) -> None:
    """Another user of a shared log folder replaces the new log with a symlink the moment it exists: the
    server still writes to the file the start created (now under the other name), never to the target."""
    log, moved, victim = tmp_path / "server-new.log", tmp_path / "moved.log", tmp_path / "victim"
    swapped = threading.Event()

    def swap() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.rename(log, moved)
            except FileNotFoundError:
                continue
            os.symlink(victim, log)
            swapped.set()
            return

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    pid = await procs.start_detached(LocalHost(), str(tmp_path), str(log), ENV, [sys.executable, "-c", SLEEPER])
    try:
        racer.join(10)
        assert swapped.is_set()
        deadline = time.monotonic() + 10
        while "up" not in moved.read_text():
            assert time.monotonic() < deadline, "the server's output is not in the file the start created"
            time.sleep(0.02)
        assert not victim.exists()
        created = os.stat(moved).st_ino
        assert os.stat(f"/proc/{pid}/fd/1").st_ino == created and os.stat(f"/proc/{pid}/fd/2").st_ino == created
        # The start's own descriptor 3 is closed for the server: only its stdout and stderr hold the log.
        holders = [fd for fd in os.listdir(f"/proc/{pid}/fd") if os.stat(f"/proc/{pid}/fd/{fd}").st_ino == created]
        assert sorted(holders) == ["1", "2"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
