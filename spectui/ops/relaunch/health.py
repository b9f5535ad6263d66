"""Watch a freshly started server until it is healthy or has failed: its new log through the Pipeline
(so the rules diagnose a crash at once), its /health endpoint, and whether its process still lives.

The log is followed with sources.tail.LogTail (one open handle, SFTP over SSH, woken by the host's
notifier), not by re-reading it on a timer. A dropped link ends the watch with HostError, as a failed
read did before, so the relaunch runner reconnects once and starts a fresh watch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spectui.core.log import Pipeline, ServerPhase
from spectui.errors import HostError
from spectui.sources.base import ConnState, TailLines, TailState
from spectui.sources.http import ServerProbe
from spectui.sources.tail import LogTail

CHECK_S = 0.8  # /health and liveness this often: a round trip each over SSH
MISSING_RETRY_S = 0.2  # the log is created by the start command's redirect: it appears at once
READ_CHUNK = 1 << 20
CRASH_SETTLE_S = 1.0  # after a crash line, follow ~1 s more so the whole traceback reaches the rules


@dataclass(frozen=True, slots=True)
class HealthOutcome:
    healthy: bool
    reason: str  # "GET /health 200", "fired up", "crashed", "exited", "timeout"
    phase: str
    diagnoses: tuple[Any, ...] = ()  # core.rules.Diagnosis, most severe first
    accept_len: float | None = None  # mean over the launch so far
    gen_tokens_per_s: float | None = None


class LaunchWatcher:
    """Follows one launch: `pid` started with output to `log`, serving on `addr:port`."""

    def __init__(
        self,
        host: Any,
        pid: int,
        log: str,
        port: int,
        addr: str,
        *,
        pipeline: Pipeline,
        on_phase: Callable[[str], None] | None = None,
    ) -> None:
        self.host, self.pid, self.log, self.port = host, pid, log, port
        self.addr = "127.0.0.1" if addr in ("", "0.0.0.0", "::", "[::]") else addr
        self.pipeline = pipeline
        self.on_phase = on_phase
        self.phase = ServerPhase.STARTING
        self._probe: Any = None
        # One tail for the watcher's life: a later follow (observe) resumes at its offset, as after a
        # reconnect, so no line is fed twice.
        self.tail = LogTail(host, log, from_start=True, missing_retry=MISSING_RETRY_S)
        self._fed = asyncio.Event()  # set whenever lines were fed (the phase may have changed)
        self._error: BaseException | None = None
        self._pump: asyncio.Task[None] | None = None

    @property
    def offset(self) -> int:
        """Bytes of the log fed to the pipeline (complete lines)."""
        return self.tail.offset

    async def wait_healthy(self, timeout: float) -> HealthOutcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_check = loop.time()
        self._probe = ServerProbe(self.host, self.port, self.addr, timeout=3.0)
        self._start()
        try:
            while True:
                self._fed.clear()  # lines fed during the checks below set it again: no wake-up is missed
                self._raise_error()
                if self.phase == ServerPhase.CRASHED:
                    await asyncio.sleep(CRASH_SETTLE_S)
                    return await self._final(False, "crashed")
                if self.phase in (ServerPhase.READY, ServerPhase.SERVING):
                    return self._outcome(True, "fired up")
                if loop.time() >= next_check:
                    if not await self.alive():
                        return await self._final(False, "exited")
                    if await self._health_ok():
                        return self._outcome(True, "GET /health 200")
                    next_check = loop.time() + CHECK_S
                now = loop.time()
                if now >= deadline:
                    return self._outcome(False, "timeout")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._fed.wait(), max(0.0, min(next_check, deadline) - now))
        finally:
            await self._stop()
            await self._probe.close()

    async def observe(self, seconds: float) -> HealthOutcome:
        """Keep following the log for `seconds` so the accept length / tok/s reached can be recorded."""
        self._start()
        try:
            await asyncio.sleep(seconds)
            self._raise_error()
        finally:
            await self._stop()
        return self._outcome(self.phase != ServerPhase.CRASHED, "observed")

    async def alive(self) -> bool:
        result = await self.host.run(["ps", "-o", "stat=", "-p", str(self.pid)], timeout=30)
        state = result.stdout.strip()
        return result.exit_status == 0 and bool(state) and not state.startswith("Z")

    async def _health_ok(self) -> bool:
        try:
            return (await self._probe.health()).ok  # 503 while loading, no answer before uvicorn is up
        except HostError:  # the tunnel could not be opened yet: keep waiting, the deadline decides
            return False

    # ---- following the log ------------------------------------------------------------------------

    def _start(self) -> None:
        self._error = None
        self._pump = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        events = self.tail.__aiter__()
        try:
            async for ev in events:
                if isinstance(ev, TailLines):
                    self._apply(self.pipeline.feed_lines(ev.lines))
                    self._fed.set()
                elif isinstance(ev, TailState) and ev.state in (ConnState.RECONNECTING, ConnState.LOST):
                    # The runner owns reconnecting (once, then a fresh watch): stop here, before the
                    # tail would reconnect on its own.
                    raise HostError(ev.detail or f"connection to {self.host.name} lost")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the waiting method, raised there
            self._error = exc
            self._fed.set()
        finally:
            with contextlib.suppress(Exception):
                await events.aclose()  # type: ignore[attr-defined]  # closes the file and the notifier

    async def _stop(self) -> None:
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    async def _final(self, healthy: bool, reason: str) -> HealthOutcome:
        """The launch has ended: feed what the tail has not handed out yet (up to a last line without its
        newline, which only end-of-stream releases), then finish the pipeline."""
        await self._stop()
        offset = self.tail.offset
        with contextlib.suppress(FileNotFoundError, PermissionError):
            while chunk := await self.host.read_range(self.log, offset, READ_CHUNK):
                offset += len(chunk)
                self._apply(self.pipeline.feed_bytes(chunk))
                if len(chunk) < READ_CHUNK:
                    break
        return self._outcome(healthy, reason, final=True)

    def _apply(self, update: Any) -> None:
        phase = update.snapshot.phase
        if phase != self.phase:
            self.phase = phase
            if self.on_phase is not None:
                self.on_phase(str(phase))

    def _outcome(self, healthy: bool, reason: str, *, final: bool = False) -> HealthOutcome:
        if final:
            with contextlib.suppress(Exception):
                self._apply(self.pipeline.finish())
        snap = self.pipeline.snapshot
        diagnoses = tuple(self.pipeline.diagnoses)
        return HealthOutcome(healthy, reason, str(self.phase), diagnoses, snap.accept_len.mean,
                             snap.gen_tokens_per_s.mean)
