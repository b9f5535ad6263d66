"""LogTail's start: the log's identity (stat) and its handle (open) are asked for at once — over SSH each is a
channel that runs the login shell's rc files first — and a handle is never left open when one of them fails.
A real LocalHost on real files, with each call held 0.3 s to stand for that channel start-up."""

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

    def __init__(self, *, stat_says_missing: bool = False) -> None:
        self._host = LocalHost()
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
        f = await self._held(lambda: self._host.open(path))
        self.open_handles += 1
        close = f.close

        async def counted_close() -> None:
            self.open_handles -= 1
            await close()

        f.close = counted_close
        return f


async def test_stat_and_open_overlap(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("one\ntwo\n")
    host = SlowStart()
    out = Collected()
    async with running(LogTail(host, str(log), from_start=True), out):
        await wait_for(out, lambda o: o.lines == ["one", "two"])
        assert host.most_in_flight == 2  # asked for together, not one after the other
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
