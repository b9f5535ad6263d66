"""The work behind `spectui watch`: connect, find the log, follow it, print events (JSONL or human)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator
from typing import IO, Any

from spectui.core.log import Pipeline
from spectui.core.text import json_text, terminal_safe
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
        text = json_text(ev) if self.jsonl else human(ev)  # log text is data: no raw escape/C1 in a line
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
    if kind == "server":
        was = f" (was pid {ev['previous_pid']})" if ev.get("previous_pid") else ""
        return f"server  {ev['state']} pid {ev['pid']}{was}, log {_clean(str(ev.get('log')))}"
    if kind == "connection":
        detail = f" ({_clean(ev['detail'])})" if ev.get("detail") else ""
        return f"conn    {ev['state']}{detail}"
    return None


async def _connect(host: Any, emit: Printer) -> None:
    """Connect, retrying while the host is unreachable; key and permission problems end the watch."""
    from spectui.commands.connect import UNKNOWN_HOST_TRIES
    from spectui.errors import UnknownHostError

    attempt = unknown = 0
    while True:
        try:
            await host.connect()
            return
        except (HostKeyError, AuthError):
            raise
        except ConnectError as exc:
            unknown = unknown + 1 if isinstance(exc, UnknownHostError) else 0
            if unknown >= UNKNOWN_HOST_TRIES:  # a misspelt host name: the resolver's error, exit 2
                raise
            if unknown:  # retried quietly: a typo ends in one line
                await asyncio.sleep(BACKOFF[min(unknown, len(BACKOFF) - 1)])
                continue
            emit({"type": "connection", "state": ConnState.RECONNECTING.value if attempt < 6 else ConnState.LOST.value,
                  "detail": f"{exc} (retrying)"})
            await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            attempt += 1


async def _events(args: Any, target: Target, emit: Printer) -> AsyncGenerator[dict[str, Any], None]:
    host = open_host(target, args, read_only=True)
    try:
        if target.is_remote:
            await _connect(host, emit)
        if target.path is not None:  # a log file: followed as a file (no health, no successor; as the cockpit)
            async with contextlib.aclosing(follow(host, target.path, from_start=args.from_start,
                                                  backfill_lines=args.backfill, raw=args.raw,
                                                  engine=make_engine(baseline_tps=args.baseline_tps))) as events:
                async for ev in events:
                    yield ev
            return
        from spectui.commands.watch.server import ServerFollow
        from spectui.sources.target import pick_one

        proc = await pick_one(host, args.pid, getattr(args, "server_port", None))
        if proc.log_path is None:
            raise DiscoveryError(f"server pid {proc.pid} on {host.name} does not log to a file (its output "
                                 f"goes to a terminal or pipe); give the log path as TARGET:/path/to/log")

        async def draft(server: Any) -> Any:
            from spectui.sources.ckptreader import inspect_server

            return (await inspect_server(host, server)).inspection.findings

        # A server: its health is followed too, and after it exits the server that took its place.
        watched = ServerFollow(host, proc, from_start=args.from_start, backfill=args.backfill, raw=args.raw,
                               baseline_tps=args.baseline_tps, draft=draft if getattr(args, "inspect", False) else None)
        async with contextlib.aclosing(watched.events()) as events:
            async for ev in events:
                yield ev
    finally:
        await host.close()


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
        # aclosing: the follow ends here, in this task (tail, probes, host closed in order), also when the
        # reader went away (`| head`) — not later in asyncio.run's shutdown, which would cancel the cleanup.
        async with contextlib.aclosing(_events(args, target, emit)) as events:
            async for ev in events:
                emit(ev)

    task = asyncio.ensure_future(pump())
    try:
        await asyncio.wait({task}, timeout=args.duration)  # --duration reached: a normal end
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await _settle()
    return 1 if emit.errors else 0  # CONTRACTS: 1 when an error-severity diagnosis was seen


async def _settle(timeout: float = 1.0) -> None:
    """Let fire-and-forget closes (an SFTP handle's close, not awaited by design) finish now that the
    host is closed, instead of being destroyed pending when the loop closes ("Task was destroyed")."""
    stray = asyncio.all_tasks() - {asyncio.current_task()}
    if stray:
        await asyncio.wait(stray, timeout=timeout)
