"""Helpers for tail tests: a collector task that gathers every line a LogTail hands out."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from spectui.sources.base import TailLines, TailState


@dataclass
class Collected:
    lines: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    states: list[TailState] = field(default_factory=list)
    backfill: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)


async def collect(tail, out: Collected) -> None:  # type: ignore[no-untyped-def]
    async for ev in tail:
        if isinstance(ev, TailLines):
            target = out.backfill if ev.backfill else out.lines
            target.extend(ev.lines)
            if not ev.backfill:
                out.numbers.extend(range(ev.first_line, ev.first_line + len(ev.lines)))
        else:
            out.states.append(ev)
        out.changed.set()


async def wait_for(out: Collected, pred, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until pred(out) holds (a generous ceiling turns a hang into a failure, not a timing check)."""
    async def loop() -> None:
        while not pred(out):
            out.changed.clear()
            await out.changed.wait()

    await asyncio.wait_for(loop(), timeout)


@contextlib.asynccontextmanager
async def running(tail, out: Collected):  # type: ignore[no-untyped-def]
    task = asyncio.create_task(collect(tail, out))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
