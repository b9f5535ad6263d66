"""Watch a freshly started server until it is healthy or has failed: its new log through the Pipeline
(so the rules diagnose a crash at once), its /health endpoint, and whether its process still lives."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spectui.core.metrics import ServerPhase
from spectui.core.pipeline import Pipeline
from spectui.errors import HostError
from spectui.sources.http import ServerProbe

POLL_S = 0.2
CHECK_EVERY = 4  # /health and liveness every 4th poll: a round trip each over SSH
READ_CHUNK = 1 << 20
CRASH_SETTLE_POLLS = 5  # after a crash line, read ~1 s more so the whole traceback reaches the rules


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
        self.offset = 0
        self.phase = ServerPhase.STARTING
        self._probe: Any = None

    async def wait_healthy(self, timeout: float) -> HealthOutcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        tick = 0
        self._probe = ServerProbe(self.host, self.port, self.addr, timeout=3.0)
        try:
            while True:
                await self._read_log()
                if self.phase == ServerPhase.CRASHED:
                    for _ in range(CRASH_SETTLE_POLLS):
                        await asyncio.sleep(POLL_S)
                        await self._read_log()
                    return self._outcome(False, "crashed", final=True)
                if self.phase in (ServerPhase.READY, ServerPhase.SERVING):
                    return self._outcome(True, "fired up")
                if tick % CHECK_EVERY == 0:
                    if not await self.alive():
                        await self._read_log()
                        return self._outcome(False, "exited", final=True)
                    if await self._health_ok():
                        return self._outcome(True, "GET /health 200")
                if loop.time() >= deadline:
                    return self._outcome(False, "timeout")
                tick += 1
                await asyncio.sleep(POLL_S)
        finally:
            await self._probe.close()

    async def observe(self, seconds: float) -> HealthOutcome:
        """Keep reading the log for `seconds` so the accept length / tok/s reached can be recorded."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            await asyncio.sleep(POLL_S)
            await self._read_log()
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

    async def _read_log(self) -> None:
        while True:
            try:
                chunk = await self.host.read_range(self.log, self.offset, READ_CHUNK)
            except (FileNotFoundError, PermissionError):
                return
            if not chunk:
                return
            self.offset += len(chunk)
            self._apply(self.pipeline.feed_bytes(chunk))
            if len(chunk) < READ_CHUNK:
                return

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


def describe_diagnoses(diagnoses: tuple[Any, ...], limit: int = 3) -> list[str]:
    return [f"{d.rule}: {d.title}" for d in diagnoses[:limit]]

