"""follow(): LogTail + Pipeline -> the watch events of CONTRACTS.md as dicts (watch, demo --headless, TUI).

Events: `line` (with raw=True: every log line exactly once), `decode`, `phase`, `diagnosis`,
`connection` (when the state or its `detail` changes: connected, rotated, file missing, reconnecting). `n` is the line number in the file being
followed (it restarts at 1 when the log is rotated, as in the new file).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any

from spectui.core.launch import parse_command
from spectui.core.log import DecodeSample, Pipeline, PipelineUpdate
from spectui.core.rules import RuleEngine, load_rules
from spectui.sources.base import ConnState, Host, TailLines, TailState
from spectui.sources.tail import LogTail

IDLE_FLUSH = 0.5  # a traceback still waiting for its end is emitted after this much quiet


def make_engine(argv: tuple[str, ...] | list[str] | None = None, version: str | None = None, *,
                baseline_tps: float | None = None) -> RuleEngine:
    """The rule engine, with the server's launch command when known.

    `baseline_tps`: decode tok/s of this server without speculation (the "slower than baseline" rule);
    None = only a baseline measured in an earlier launch of the same log counts.
    """
    rules, _errors = load_rules()
    launch = None
    if argv:
        with contextlib.suppress(Exception):  # an unparseable command only costs the config-aware rules
            launch = parse_command(list(argv))  # rules read launch.sglang_args: a simulator's knobs are left out
    return RuleEngine(rules, launch=launch, version=version, baseline_tps=baseline_tps)


class EventBuilder:
    """Turns tail events and pipeline updates into contract dicts; keeps file line numbers right."""

    def __init__(self, pipeline: Pipeline, *, raw: bool = False) -> None:
        self.pipeline = pipeline
        self.raw = raw
        self.state: tuple[ConnState, str] | None = None
        self._pipe_next: int | None = None  # pipeline's number for the next line fed
        self._delta = 0  # file line number - pipeline line number

    def on_state(self, ev: TailState) -> list[dict[str, Any]]:
        if (ev.state, ev.detail) == self.state:
            return []  # a retry that changed nothing (e.g. the log file is still missing)
        self.state = (ev.state, ev.detail)
        return [{"type": "connection", "state": ev.state.value, "detail": ev.detail}]

    def on_lines(self, ev: TailLines) -> list[dict[str, Any]]:
        if self._pipe_next is None:
            self._pipe_next = ev.first_line
            self.pipeline = Pipeline(engine=self.pipeline.engine, first_line=ev.first_line)
        elif ev.first_line > self._pipe_next:  # a gap (the launch header, then the backfill): numbers stay the file's
            self.pipeline.parser.skip_to(ev.first_line)
            self._pipe_next = ev.first_line
        self._delta = ev.first_line - self._pipe_next
        out: list[dict[str, Any]] = []
        if self.raw and not ev.header:  # the launch header is analysed, not printed: raw lines stay contiguous
            out.extend({"type": "line", "n": ev.first_line + i, "text": t} for i, t in enumerate(ev.lines))
        self._pipe_next += len(ev.lines)
        out.extend(self.on_update(self.pipeline.feed_lines(ev.lines)))
        return out

    def flush(self) -> list[dict[str, Any]]:
        return self.on_update(self.pipeline.flush())

    def finish(self) -> list[dict[str, Any]]:
        return self.on_update(self.pipeline.finish())

    def on_update(self, update: PipelineUpdate) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for rec in update.records:
            if type(rec) is DecodeSample:
                out.append({"type": "decode", "n": rec.line + self._delta, "accept_len": rec.accept_len,
                            "gen_tokens_per_s": rec.gen_tokens_per_s, "running_req": rec.running_req,
                            "queue_req": rec.queue_req})
        if update.phase_changed:
            out.append({"type": "phase", "phase": update.snapshot.phase.value})
        for d in update.diagnoses:
            to_json = getattr(d, "to_json", None)
            out.append({"type": "diagnosis", **(to_json() if to_json else dict(d))})
        return out


async def follow(
    host: Host,
    path: str,
    *,
    from_start: bool = False,
    backfill_lines: int = 200,
    raw: bool = False,
    engine: Any = None,
    tail: LogTail | None = None,
    on_lines: Callable[[TailLines], None] | None = None,
) -> AsyncGenerator[dict[str, Any], None]:
    """Follow `path` on `host` forever, yielding watch events. Cancel (or stop iterating) to end.

    `on_lines`: called with every batch of lines as it arrives (liveness: when the log last moved)."""
    # With a backfill, also the launch's server_args line above it (a server up for hours): the override
    # rules and the effective config need it. `--backfill 0` asks for nothing before now.
    tail = tail or LogTail(host, path, from_start=from_start, backfill_lines=backfill_lines,
                           launch_header=backfill_lines > 0)
    builder = EventBuilder(Pipeline(engine=engine), raw=raw)
    queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=64)  # bounded: a slow reader slows the tail

    async def pump() -> None:
        try:
            async for ev in tail:
                await queue.put(ev)
        except Exception as exc:  # handed to the consumer, raised there
            await queue.put(exc)

    task = asyncio.create_task(pump())
    pending_flush = False
    try:
        while True:
            try:
                # asyncio.timeout, not wait_for: no inner task, so cancelling a watch is immediate.
                async with asyncio.timeout(IDLE_FLUSH if pending_flush else None):
                    ev = await queue.get()
            except TimeoutError:
                pending_flush = False
                for out in builder.flush():
                    yield out
                continue
            if isinstance(ev, BaseException):
                raise ev
            if on_lines is not None and isinstance(ev, TailLines) and ev.lines:
                on_lines(ev)
            events = builder.on_lines(ev) if isinstance(ev, TailLines) else builder.on_state(ev)
            pending_flush = pending_flush or isinstance(ev, TailLines)
            for out in events:
                yield out
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
