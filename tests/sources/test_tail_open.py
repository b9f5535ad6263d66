"""LogTail's start: the log's identity is the one of the file its handle reads (a rename landing just after the
`open` is opened again), and a handle is never left open when one of them fails. A real
LocalHost on real files, with each call held 0.3 s to stand for an SSH channel's start-up. (Over SSH the
host pairs the two itself, its SFTP session and read loop started together: test_ssh_rotation_race.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tailhelp import Collected, running, wait_for

from spectui.sources.local import LocalHost
from spectui.sources.tail import LogTail

HOLD = 0.3


class SlowStart:
    """LocalHost whose stat and open each take HOLD longer; counts the calls in flight and open handles."""

    def __init__(self, *, stat_says_missing: bool = False, after_first_open: Any = None) -> None:
        self._host = LocalHost()
        self.after_first_open = after_first_open
        self.in_flight = self.most_in_flight = 0
        self.open_handles = 0
        self.stat_says_missing = stat_says_missing

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)

    async def _held(self, call: Any) -> Any:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(HOLD)
            return await call()
        finally:
            self.in_flight -= 1

    async def stat(self, path: str) -> Any:
        st = await self._held(lambda: self._host.stat(path))
        return None if self.stat_says_missing else st

    async def open(self, path: str) -> Any:
        hook, self.after_first_open = self.after_first_open, None

        async def opening() -> Any:
            f = await self._host.open(path)
            if hook is not None:
                hook()  # the file is replaced just after it was opened, before a stat beside it looks
            return f

        f = await self._held(opening)
        self.open_handles += 1
        close = f.close

        async def counted_close() -> None:
            self.open_handles -= 1
            await close()

        f.close = counted_close
        return f


async def test_a_rename_just_after_the_open_pairs_the_handle_with_its_own_inode(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("one\ntwo\n")

    def rotate() -> None:  # just after the tail opened the old file
        log.rename(tmp_path / "server.log.1")
        log.write_text("three\n")

    host = SlowStart(after_first_open=rotate)
    out = Collected()
    async with running(LogTail(host, str(log), from_start=True, identity_check=0.2), out):
        await wait_for(out, lambda o: o.lines == ["three"])
        with open(log, "a") as f:
            f.write("four\n")
        await wait_for(out, lambda o: len(o.lines) >= 2)
        await asyncio.sleep(6 * HOLD)  # identity checks: a handle paired with the old inode would re-read
        assert out.lines == ["three", "four"]
        assert not any(s.rotated for s in out.states)
        assert host.open_handles == 1


async def test_a_handle_opened_while_stat_finds_no_file_is_closed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("one\n")
    host = SlowStart(stat_says_missing=True)  # e.g. removed between the two calls
    out = Collected()
    async with running(LogTail(host, str(log), from_start=True, missing_retry=0.05), out):
        await wait_for(out, lambda o: bool(o.states))
        assert "missing" in out.states[0].detail
        await asyncio.sleep(3 * HOLD)  # a few more rounds
        assert host.open_handles == 0 and not out.lines
