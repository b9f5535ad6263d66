"""LocalHost: the Host interface on this machine (spectui running on the GPU box, the demo, tests).

Commands are exec'd without a shell. Files are read with os.pread on an open descriptor, so a tail keeps
reading the inode it opened even after the path is renamed. The change notifier polls the path with
stat(): every 50 ms while the file is changing, backing off to every 500 ms after a quiet second and
snapping back on the first change, so following a quiet log costs a couple of wake-ups a second.

Every tail of one event loop shares one poller (`SharedPoll`, what `LocalHost.notifier` hands out): one
timer stats every followed path in the same wake-up and wakes the tails whose file changed or whose
timeout is due, so ten tabs on local logs cost about the wake-ups of one (perf/perf_tabs.py, idle CPU).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import weakref
from collections.abc import Sequence
from typing import Any

from spectui.errors import RemoteCommandError
from spectui.sources.base import FileStat, RunResult, check_result

POLL_INTERVAL = 0.05  # while the file is changing
IDLE_INTERVAL = 0.5  # once it has been quiet for QUIET_AFTER seconds
QUIET_AFTER = 1.0
COALESCE = 0.1  # a shared poller's waiter whose timeout is due this soon is woken with the others


class LocalFile:
    """An open local file (RemoteFile protocol)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def size(self) -> int:
        return os.fstat(self._fd).st_size

    async def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._fd, length, offset)

    async def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


class SharedPoll:
    """One poller for every path followed on this machine by one event loop (see `shared_poll`).

    Each path's stat() (size, mtime, inode) is polled; a tail is woken with True when its file changed (it
    drains and re-checks identity), with False when its `timeout` passes quietly (it drains then too, so a
    change stat() cannot see is picked up within `timeout`). A path that changed in the last `quiet_after`
    seconds makes the poller stat every path each `interval`, else each `idle_interval`. A change seen while its
    tail is not waiting is kept and returned by its next `wait` at once (no change is missed). A timeout
    is never late; it may end up to `coalesce` seconds early, so that tails wake in the same timer call.
    """

    def __init__(self, interval: float = POLL_INTERVAL, idle_interval: float = IDLE_INTERVAL,
                 quiet_after: float = QUIET_AFTER, coalesce: float = COALESCE) -> None:
        self.interval = interval
        self.idle_interval = max(idle_interval, interval)
        self.quiet_after = quiet_after
        self.coalesce = coalesce
        self.watches: set[SharedNotifier] = set()
        self.polls = 0  # timer calls so far (tests)
        self._handle: asyncio.TimerHandle | None = None

    def watch(self, path: str) -> SharedNotifier:
        w = SharedNotifier(self, path)
        self.watches.add(w)
        self._plan()
        return w

    def _forget(self, w: SharedNotifier) -> None:
        self.watches.discard(w)
        if not self.watches and self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _plan(self, at: float | None = None) -> None:
        """Make sure the timer fires by `at` (loop time), or by the next poll of the cadence."""
        if not self.watches:
            return
        loop = asyncio.get_running_loop()
        if at is None:
            now = loop.time()
            busy = any(now - w.changed_at < self.quiet_after for w in self.watches)
            at = now + (self.interval if busy else self.idle_interval)
        if self._handle is not None:
            if self._handle.when() <= at:
                return
            self._handle.cancel()
        self._handle = loop.call_at(at, self._tick)

    def _tick(self) -> None:
        self._handle = None
        self.polls += 1
        loop = asyncio.get_running_loop()
        now = loop.time()
        for w in list(self.watches):
            sig = _signature(w.path)
            if sig != w.sig:
                w.sig, w.changed_at = sig, now
                w.fire(True)
        soon = now + self.coalesce
        later = [w.deadline for w in self.watches if w.waiter is not None and w.deadline > soon]
        for w in list(self.watches):
            if w.waiter is not None and w.deadline <= soon:
                w.fire(False)
        self._plan()
        if later:
            self._plan(min(later))


class SharedNotifier:
    """One path's handle on a SharedPoll (the notifier protocol: `wait(timeout)`, `close()`)."""

    def __init__(self, poll: SharedPoll, path: str) -> None:
        self.poll = poll
        self.path = path
        self.sig = _signature(path)
        self.changed_at = asyncio.get_running_loop().time()
        self.pending = False  # changed while nobody waited: the next wait returns True at once
        self.waiter: asyncio.Future[bool] | None = None
        self.deadline = 0.0

    async def wait(self, timeout: float) -> bool:
        if self.pending:
            self.pending = False
            return True
        loop = asyncio.get_running_loop()
        self.waiter = loop.create_future()
        self.deadline = loop.time() + max(0.0, timeout)
        self.poll._plan(self.deadline)
        try:
            return await self.waiter
        finally:
            self.waiter = None

    def fire(self, changed: bool) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(changed)
            self.waiter = None
        elif changed:
            self.pending = True

    async def close(self) -> None:
        self.poll._forget(self)


_POLLS: weakref.WeakKeyDictionary[Any, SharedPoll] = weakref.WeakKeyDictionary()


def shared_poll() -> SharedPoll:
    """The running event loop's SharedPoll (made on first use)."""
    loop = asyncio.get_running_loop()
    poll = _POLLS.get(loop)
    if poll is None:
        poll = _POLLS[loop] = SharedPoll()
    return poll


def _signature(path: str) -> tuple[int, int, int] | None:
    """What changes when a log is appended to, truncated or replaced; None while the path is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


class LocalHost:
    """This machine."""

    def __init__(self, *, read_only: bool = False) -> None:
        self.name = "local"
        self.read_only = read_only

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = False, input: str | None = None
    ) -> RunResult:
        argv = list(argv)
        try:
            # A new session: a timed-out command is killed by its own process group, nothing else.
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL if input is None else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            result = RunResult(127, "", f"{argv[0]}: command not found")
            return check_result(argv, result, self.name) if check else result
        try:
            async with asyncio.timeout(timeout):
                out, err = await proc.communicate(None if input is None else input.encode(errors="surrogateescape"))
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise RemoteCommandError(f"local: `{argv[0]}` did not finish within {timeout:g} s") from None
        result = RunResult(
            proc.returncode if proc.returncode is not None else -1,
            out.decode(errors="replace"),
            err.decode(errors="replace"),
        )
        return check_result(argv, result, self.name) if check else result

    async def stat(self, path: str) -> FileStat | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileStat(size=st.st_size, inode=st.st_ino, mtime=st.st_mtime)

    async def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    async def read_file(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    async def file_size(self, path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except (FileNotFoundError, NotADirectoryError):
            return None

    async def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    async def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    async def locate(self, folder: str, inode: int) -> str | None:
        """The path in `folder` with this inode (where a rename moved a followed file), or None."""
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.inode() == inode and entry.is_file(follow_symlinks=False):
                        return entry.path
        except OSError:
            return None
        return None

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        return remote_port  # already local: nothing to forward

    async def open(self, path: str) -> LocalFile:
        return LocalFile(os.open(path, os.O_RDONLY))

    async def notifier(self, path: str) -> SharedNotifier:
        return shared_poll().watch(path)

    async def connect(self) -> None:
        return None  # nothing to connect: the same call as SSHHost, so callers need not ask

    async def reconnect(self) -> None:
        return None

    async def close(self) -> None:
        return None
