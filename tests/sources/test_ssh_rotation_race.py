"""Exactly once when a rename rotation lands while the tail (re)opens the log: a reconnect must never
resume the rotated file from its start and then stay on it.

Against a real OpenSSH sshd. The first test puts the rename exactly between the log's `open` and its
`stat` (the window a busy machine widens); the second repeats connection kills and rotations many times
while two CPU-bound processes keep the machine busy, and checks every line exactly once, in order."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sshd_harness import Sshd
from tailhelp import Collected, running, wait_for

from spectui.sources.base import ConnState
from spectui.sources.ssh import SSHHost, SSHOptions
from spectui.sources.tail import LogTail

pytestmark = pytest.mark.sshd


def host_for(sshd: Sshd) -> SSHHost:
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:  # reopened per write, like a logger that follows the path
        f.write(text)


class RenameOnOpen:
    """One rotation armed on the real SSH host, to land right after a file `open` of the log returns and
    before any `stat` of it answers (a `stat` asked meanwhile waits up to 1 s for the rotation)."""

    def __init__(self, host: SSHHost, log: Path, rotate: Any) -> None:
        self._log = str(log)
        self._rotate = rotate
        self.armed = False
        self.done = asyncio.Event()
        real_open, real_stat = host.files.open, host.stat

        async def open_(path: str) -> Any:
            f = await real_open(path)
            if self.armed and path == self._log:
                self.armed = False
                self._rotate()
                self.done.set()
            return f

        async def stat(path: str) -> Any:
            if self.armed and path == self._log:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.done.wait(), 1.0)
            return await real_stat(path)

        host.files.open = open_  # type: ignore[method-assign]
        host.stat = stat  # type: ignore[method-assign]


async def test_rename_between_open_and_stat_of_a_reconnect_is_followed_once(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    expected: list[str] = []

    def write(tag: str, n: int) -> None:
        for i in range(n):
            append(log, f"{tag} {i}\n")
            expected.append(f"{tag} {i}")

    def rotate() -> None:
        os.rename(log, tmp_path / "server.log.1")
        write("new", 50)  # the new file at the path already has lines when the tail looks

    host = host_for(sshd)
    rig = RenameOnOpen(host, log, rotate)
    await host.connect()
    out = Collected()
    try:
        async with running(LogTail(host, str(log), from_start=True), out):
            await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
            write("old", 100)
            await wait_for(out, lambda o: len(o.lines) == 100)
            rig.armed = True
            assert sshd.kill_sessions() >= 1
            await asyncio.wait_for(rig.done.wait(), 20)
            await wait_for(out, lambda o: len(o.lines) >= len(expected))
            write("after", 50)
            await wait_for(out, lambda o: len(o.lines) >= len(expected))
            await asyncio.sleep(0.3)  # anything repeated late would show now
    finally:
        await host.close()
    assert out.lines == expected


class Watched:
    """The real SSH host; `opening` is set when the tail next asks about the log (stat or open)."""

    def __init__(self, host: SSHHost) -> None:
        self._host = host
        self.opening = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)

    async def stat(self, path: str) -> Any:
        self.opening.set()
        return await self._host.stat(path)

    async def open(self, path: str) -> Any:
        self.opening.set()
        return await self._host.open(path)


def _burners(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
            for _ in range(n)]


@pytest.mark.timeout(150)
async def test_many_kills_and_rotations_on_a_busy_machine_give_every_line_once(sshd: Sshd, tmp_path: Path) -> None:
    rounds, per = 20, 40
    log = tmp_path / "server.log"
    log.write_text("")
    expected: list[str] = []
    rng = random.Random(26)

    def write(tag: str, n: int) -> None:
        for i in range(n):
            append(log, f"{tag} {i}\n")
            expected.append(f"{tag} {i}")

    burners = _burners(2)
    real = host_for(sshd)
    host = Watched(real)
    await real.connect()
    out = Collected()
    started = time.monotonic()
    try:
        async with running(LogTail(host, str(log), from_start=True, identity_check=0.5), out):  # type: ignore[arg-type]
            await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
            for r in range(rounds):
                write(f"r{r}a", per)
                host.opening.clear()
                assert sshd.kill_sessions() >= 1
                # The rename lands somewhere in the reconnect: in odd rounds anywhere (backoff, connect,
                # stat, open), in even rounds just after the reconnected tail starts to look at the log.
                if r % 2:
                    await asyncio.sleep(rng.uniform(0.0, 0.6))
                else:
                    await asyncio.wait_for(host.opening.wait(), 30)
                    await asyncio.sleep(rng.uniform(0.0, 0.3))
                os.rename(log, tmp_path / f"server.log.{r}")
                write(f"r{r}b", per)
                await wait_for(out, lambda o: len(o.lines) >= len(expected), timeout=30)
            await asyncio.sleep(0.6)  # an identity check after the last round: a late repeat shows
    finally:
        await real.close()
        for p in burners:
            p.kill()
            p.wait()
    took = time.monotonic() - started
    assert out.lines == expected, (len(out.lines), len(expected))
    assert sum(s.rotated for s in out.states) == rounds
    print(f"{rounds} kill+rotation rounds in {took:.1f} s")
