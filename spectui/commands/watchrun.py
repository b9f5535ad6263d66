"""The work behind `spectui watch`: connect, find the log, follow it, print events (JSONL or human)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

from spectui.core.log import Pipeline
from spectui.core.text import terminal_safe
from spectui.errors import AuthError, ConnectError, DiscoveryError, HostKeyError
from spectui.sources.base import ConnState, TailLines
from spectui.sources.follow import EventBuilder, follow, make_engine
from spectui.sources.target import Target, open_host, parse_target

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)


class Printer:
    """Writes events: JSON lines, or a plain human form (never markup, control characters stripped)."""

    def __init__(self, *, jsonl: bool, out: IO[str] | None = None) -> None:
        self.jsonl = jsonl
        self.out = out or sys.stdout
        self._flush_pending = False
        self._broken = False
        self.errors = 0  # error-severity diagnoses printed: the exit code is 1 when there were any

    def __call__(self, ev: dict[str, Any]) -> None:
        if self._broken:
            raise BrokenPipeError  # the reader went away (`watch … | head`): end like grep does
        if ev.get("type") == "diagnosis" and ev.get("severity") == "error":
            self.errors += 1
        text = json.dumps(ev, ensure_ascii=False) if self.jsonl else human(ev)
        if text is None:
            return
        self.out.write(text + "\n")
        # Flushed once the current batch is written (the next time the loop runs), not per event: at
        # 20k lines/s a flush per line is 20k write syscalls. Outside a loop (stdin mode): at once.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.out.flush()
            return
        if not self._flush_pending:
            self._flush_pending = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        try:
            self.out.flush()
        except (BrokenPipeError, ValueError):
            self._broken = True


def _clean(text: str) -> str:
    return terminal_safe(text, None)  # log text is data: core.text drops escapes and controls


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def human(ev: dict[str, Any]) -> str | None:
    kind = ev.get("type")
    if kind == "line":
        return f"{ev['n']:>7} | {_clean(ev['text'])}"
    if kind == "decode":
        return (f"decode  line {ev['n']}: accept_len {_num(ev['accept_len'], '.2f')}  "
                f"gen {_num(ev['gen_tokens_per_s'], '.1f')} tok/s  running {_num(ev['running_req'], 'd')}  "
                f"queue {_num(ev['queue_req'], 'd')}")
    if kind == "phase":
        return f"phase   {ev['phase']}"
    if kind == "diagnosis":
        fix = ev.get("fix") or {}
        patch = " ".join([f"{k} {v}" for k, v in (fix.get("set") or {}).items()] +
                         [f"unset {k}" for k in fix.get("unset") or []])
        return (f"{str(ev.get('severity', '')).upper():7} {ev.get('rule')}: {_clean(str(ev.get('title', '')))}"
                + (f"  [fix: {_clean(patch)}]" if patch else ""))
    if kind == "health":
        return f"health  {ev['state']}" + (f" ({_clean(str(ev['reason']))})" if ev.get("reason") else "")
    if kind == "connection":
        detail = f" ({_clean(ev['detail'])})" if ev.get("detail") else ""
        return f"conn    {ev['state']}{detail}"
    return None


async def _connect(host: Any, emit: Printer) -> None:
    """Connect, retrying while the host is unreachable; key and permission problems end the watch."""
    attempt = 0
    while True:
        try:
            await host.connect()
            return
        except (HostKeyError, AuthError):
            raise
        except ConnectError as exc:
            emit({"type": "connection", "state": ConnState.RECONNECTING.value if attempt < 6 else ConnState.LOST.value,
                  "detail": f"{exc} (retrying)"})
            await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            attempt += 1


async def _events(args: Any, target: Target, emit: Printer) -> AsyncIterator[dict[str, Any]]:
    host = open_host(target, args, read_only=True)
    try:
        if target.is_remote:
            await _connect(host, emit)
        argv: tuple[str, ...] | None = None
        path = target.path
        if path is None:
            from spectui.sources.discover import pick_server

            proc = await pick_server(host, args.pid)
            if proc.log_path is None:
                raise DiscoveryError(f"server pid {proc.pid} on {host.name} does not log to a file (its output "
                                     f"goes to a terminal or pipe); give the log path as TARGET:/path/to/log")
            path, argv = proc.log_path, proc.argv
        engine = make_engine(argv, baseline_tps=args.baseline_tps)
        if getattr(args, "inspect", False) and path is not None and argv is not None:
            from spectui.sources.ckptreader import inspect_server

            engine.set_draft((await inspect_server(host, proc)).inspection.findings)
        act = _LogActivity()
        events = follow(host, path, from_start=args.from_start, backfill_lines=args.backfill, raw=args.raw,
                        engine=engine, on_lines=act.lines)
        if argv is not None:  # a server, not a plain file: its health is followed too (never for a file)
            events = _with_health(events, host, proc, act)
        async for ev in events:
            yield ev
    finally:
        await host.close()


class _LogActivity:
    """What liveness needs from the log: when a line last came, requests in flight, phase."""

    def __init__(self) -> None:
        self.last_line_at: float | None = None
        self.running: int | None = None
        self.queued: int | None = None
        self.phase: str | None = None

    def lines(self, _ev: Any) -> None:
        import time

        self.last_line_at = time.monotonic()

    def see(self, ev: dict[str, Any]) -> None:
        if ev.get("type") == "decode":
            self.running, self.queued = ev.get("running_req"), ev.get("queue_req")
        elif ev.get("type") == "phase":
            self.phase = ev.get("phase")

    def activity(self) -> Any:
        from spectui.sources.liveness import Activity

        return Activity(self.last_line_at, self.running, self.queued, self.phase)


async def _with_health(events: AsyncIterator[dict[str, Any]], host: Any, proc: Any, act: _LogActivity
                       ) -> AsyncIterator[dict[str, Any]]:
    """The log's events merged with a `health` event on each change of verdict (sources.liveness)."""
    from spectui.sources.liveness import LivenessMonitor

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

    async def health_side() -> None:
        last = None
        monitor = LivenessMonitor(host, proc.pid, proc.port, proc.host_addr or "127.0.0.1", activity=act.activity)
        async for verdict in monitor.rounds():
            await started.wait()
            if verdict is not None and verdict.key != last:
                last = verdict.key
                await queue.put(verdict.to_event())

    tasks = [asyncio.create_task(log_side()), asyncio.create_task(health_side())]
    try:
        while True:
            item = await queue.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _stdin_events(args: Any, emit: Printer) -> int:
    """`watch -`: the same events for a stream on stdin, until it ends."""
    builder = EventBuilder(Pipeline(engine=make_engine(baseline_tps=args.baseline_tps)), raw=args.raw)
    n = 1
    for raw_line in sys.stdin.buffer:
        text = raw_line.rstrip(b"\n").removesuffix(b"\r").decode(errors="replace")
        for ev in builder.on_lines(TailLines((text,), n, 0)):
            emit(ev)
        n += 1
    for ev in builder.finish():
        emit(ev)
    return 1 if emit.errors else 0


async def watch_main(args: Any) -> int:
    target = parse_target(args.target)
    emit = Printer(jsonl=args.jsonl)
    if target.kind == "stdin":
        return _stdin_events(args, emit)

    async def pump() -> None:
        async for ev in _events(args, target, emit):
            emit(ev)

    task = asyncio.ensure_future(pump())
    try:
        await asyncio.wait({task}, timeout=args.duration)  # --duration reached: a normal end
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return 1 if emit.errors else 0  # CONTRACTS: 1 when an error-severity diagnosis was seen
