"""`spectui watch` on a server (not a plain file): its log's events, its health, and its successor.

The log's events are merged with a `health` event on each change of verdict (sources.liveness). When the
process is gone, the server that took its place — a relaunch done elsewhere: another spectui, a colleague,
a launcher — is looked for with `sources.liveness.find_successor`, the finder the cockpit uses
(ui/mixins/serverwatch.py), at the cockpit's pace. Once found, a `server` event says so and the watch goes
on with the successor: its log read from its first line (a new launch; `n` restarts at 1 as in that file),
the rules judging its own command line, its health. A successor writing to the same log keeps the
follow where it is; only the probes move to the new pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from spectui.aio import cancel_and_wait
from spectui.sources.base import Host, ServerProcess
from spectui.sources.follow import follow, make_engine


class LogActivity:
    """What liveness needs from the log: when a line last came, requests in flight, phase."""

    def __init__(self) -> None:
        self.last_line_at: float | None = None
        self.running: int | None = None
        self.queued: int | None = None
        self.phase: str | None = None

    def lines(self, _ev: Any) -> None:
        self.last_line_at = time.monotonic()

    def see(self, ev: dict[str, Any]) -> None:
        if ev.get("type") == "decode":
            self.running, self.queued = ev.get("running_req"), ev.get("queue_req")
        elif ev.get("type") == "phase":
            self.phase = ev.get("phase")

    def activity(self) -> Any:
        from spectui.sources.liveness import Activity

        return Activity(self.last_line_at, self.running, self.queued, self.phase)


@dataclass(frozen=True, slots=True)
class _Switch:
    """From the health side to the follow: the successor writes another log; follow that one now."""

    proc: ServerProcess


def successor_event(succ: ServerProcess, previous_pid: int | None) -> dict[str, Any]:
    """CONTRACTS.md `watch --jsonl`: the server that replaced the followed one."""
    return {"type": "server", "state": "successor", "pid": succ.pid, "log": succ.log_path, "port": succ.port,
            "previous_pid": previous_pid}


class ServerFollow:
    """Follow a server and, after it exits, each successor in turn; `events()` yields contract dicts."""

    def __init__(self, host: Host, proc: ServerProcess, *, from_start: bool = False, backfill: int = 50,
                 raw: bool = False, baseline_tps: float | None = None,
                 draft: Callable[[ServerProcess], Awaitable[Any]] | None = None) -> None:
        self.host, self.proc = host, proc
        self.from_start, self.backfill, self.raw, self.baseline_tps = from_start, backfill, raw, baseline_tps
        self.draft = draft  # --inspect: the draft checkpoint's findings for a server, for the DRAFT rules
        self.followed = {proc.pid}  # every pid followed so far: never its own successor

    async def events(self) -> AsyncGenerator[dict[str, Any], None]:
        proc, from_start = self.proc, self.from_start
        while True:
            engine = self._engine = make_engine(proc.argv, baseline_tps=self.baseline_tps)
            if self.draft is not None:
                engine.set_draft(await self.draft(proc))
            act = LogActivity()
            assert proc.log_path is not None
            log = follow(self.host, proc.log_path, from_start=from_start, backfill_lines=self.backfill,
                         raw=self.raw, engine=engine, on_lines=act.lines)
            switch: _Switch | None = None
            async with contextlib.aclosing(self._with_health(log, proc, act)) as merged:
                async for item in merged:
                    if isinstance(item, _Switch):
                        switch = item
                        break
                    yield item
            if switch is None:
                return  # the log ended (a tail never does)
            proc, from_start = switch.proc, True  # a new launch's log: every line of it

    async def _with_health(self, events: AsyncIterator[dict[str, Any]], proc: ServerProcess, act: LogActivity
                           ) -> AsyncGenerator[Any, None]:
        """The log's events merged with health events; after `gone`, the successor's event (and a _Switch
        when it writes another log)."""
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)
        done = object()
        started = asyncio.Event()  # health events come after the log's first (connection) event

        async def log_side() -> None:
            try:
                async for ev in events:
                    act.see(ev)
                    await queue.put(ev)
                    started.set()
            except Exception as exc:  # raised in the consumer
                await queue.put(exc)
            await queue.put(done)

        tasks = [asyncio.create_task(log_side()), asyncio.create_task(self._health_side(queue, started, proc, act))]
        try:
            while True:
                item = await queue.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            await cancel_and_wait(tasks)
            with contextlib.suppress(Exception):
                await events.aclose()  # type: ignore[attr-defined]

    async def _judge_gone(self, queue: asyncio.Queue[Any]) -> None:
        """The process is gone: the rules hear it (CRASH008: no shutdown line, no traceback = SIGKILL)."""
        engine = getattr(self, "_engine", None)
        if engine is None or not hasattr(engine, "set_process_gone"):
            return
        engine.set_process_gone()
        for d in engine.feed(()):  # what that raised (and anything raised but not yet reported)
            await queue.put({"type": "diagnosis", **d.to_json()})

    async def _health_side(self, queue: asyncio.Queue[Any], started: asyncio.Event, proc: ServerProcess,
                           act: LogActivity) -> None:
        from spectui.sources.liveness import GONE, LivenessMonitor

        log = proc.log_path
        while True:
            last = None
            monitor = LivenessMonitor(self.host, proc.pid, proc.port, proc.host_addr or "127.0.0.1",
                                      activity=act.activity)
            gone = False
            async for verdict in monitor.rounds():
                await started.wait()
                if verdict is not None and verdict.key != last:
                    last = verdict.key
                    await queue.put(verdict.to_event())
                gone = verdict is not None and verdict.state == GONE
            if not gone:
                return
            await self._judge_gone(queue)
            from spectui.sources.liveness import await_successor

            succ = await await_successor(self.host, proc, old_log=lambda: log, exclude=set(self.followed))
            assert succ is not None  # no stop condition: it waits until one appears
            self.followed.add(succ.pid)
            await queue.put(successor_event(succ, proc.pid))
            if succ.log_path != log:
                await queue.put(_Switch(succ))
                return
            proc = succ  # same log: the follow stays where it is, the probes move to the new pid
            if getattr(self, "_engine", None) is not None:
                self._engine.set_process_gone(False)  # a successor runs: no longer "killed"
