"""The wake-up signal of a remote tail: one long-running `tail -c1 -F` per followed file.

Its channel is paused after the first byte, so it costs one small window of bandwidth per wake-up while
the bytes themselves come from offsets spectui tracks (over SFTP or exec, ssh.files). It needs no SFTP.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncssh

NOTIFY_WINDOW = 512  # bytes the wake-up `tail` may send before its channel blocks


class _WakeSession(asyncssh.SSHClientSession):
    """Session of the wake-up `tail`: any stdout byte means "the file grew"; stderr means "look again"."""

    def __init__(self) -> None:
        self.woken = False
        self.rotation_hint = False
        self.closed = False
        self.chan: Any = None
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, chan: Any) -> None:
        self.chan = chan

    def _wake(self) -> None:
        self.woken = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def data_received(self, data: Any, datatype: Any) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.rotation_hint = True  # "has been replaced", "file truncated", "has appeared"
        # Stop window adjusts until the tail has read: the remote tail blocks instead of streaming.
        self.chan.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()


class TailNotifier:
    """ChangeNotifier backed by a remote `tail -F` (inotify on the host, instant wake-ups)."""

    def __init__(self, chan: Any, session: _WakeSession) -> None:
        self._chan = chan
        self._session = session

    async def wait(self, timeout: float) -> bool:
        s = self._session
        if s.closed:
            await asyncio.sleep(timeout)  # notifier gone (no tail on the host): plain polling
            return True
        if not s.woken:
            # A bare future and a timer (not wait_for + Event): cancelling the tail is then immediate.
            loop = asyncio.get_running_loop()
            s.waiter = loop.create_future()
            timer = loop.call_later(timeout, s._wake)
            try:
                await s.waiter
            finally:
                timer.cancel()
                s.waiter = None
        s.woken = False
        hint, s.rotation_hint = s.rotation_hint, False
        if not s.closed:
            self._chan.resume_reading()
        return hint or s.closed

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()
