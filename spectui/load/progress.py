"""Live progress of a bench run: the figures a progress bar or the TUI shows while requests stream."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from spectui.load.record import RequestRecord

RECENT_S = 2.0  # window of Progress.recent_tokens_per_s


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str  # "warmup" | "measure" | "done"
    ok: int
    failed: int
    in_flight: int
    total: int | None  # requests of this phase; None in duration mode
    elapsed_s: float
    duration_s: float | None  # the duration limit, if any
    output_tokens: int  # tokens of this phase so far: finished requests' usage, in-flight estimates
    tokens_per_s: float | None  # output_tokens / elapsed_s
    recent_tokens_per_s: float | None  # tokens that arrived in the last RECENT_S seconds / RECENT_S

    @property
    def done(self) -> int:
        return self.ok + self.failed


class _Live:
    """Counters for the progress callback. Chunks whose token count the server did not report are
    scaled by the tokens per such chunk of the requests finished so far (1.0 until one finishes), so
    the live figures are not off by the accept length under speculation."""

    def __init__(self, phase: str, total: int | None, duration: float | None) -> None:
        self.phase, self.total, self.duration = phase, total, duration
        self.start = time.perf_counter()
        self.records: list[RequestRecord] = []
        self.active: set[int] = set()
        self.arrivals: deque[tuple[float, int, bool]] = deque()  # (time, tokens or chunks, known)
        self.unsent = 0  # multi-turn: turns not sent because an earlier turn of their conversation failed
        self._index = 0

    def next_index(self) -> int:
        """The next request's index: requests are numbered in the order they start."""
        self._index += 1
        return self._index - 1

    def on_tokens(self, t: float, n: int | None) -> None:
        self.arrivals.append((t, 1 if n is None else n, n is not None))

    def snapshot(self, phase: str | None = None) -> Progress:
        now = time.perf_counter()
        while self.arrivals and self.arrivals[0][0] < now - RECENT_S:
            self.arrivals.popleft()
        ok = failed = tokens = unknown_chunks = 0
        calib_tokens = calib_chunks = 0
        for r in self.records:
            if r.index in self.active:
                tokens += r.streamed_tokens
                unknown_chunks += r.streamed_unknown
            elif r.ok:
                ok += 1
                tokens += r.output_tokens or 0
                if r.streamed_unknown:
                    calib_tokens += (r.output_tokens or 0) - r.streamed_tokens
                    calib_chunks += r.streamed_unknown
            else:
                failed += 1
        per_chunk = calib_tokens / calib_chunks if calib_chunks and calib_tokens > 0 else 1.0
        tokens_f = tokens + unknown_chunks * per_chunk
        elapsed = now - self.start
        recent = None
        if elapsed > 0:
            recent = sum(n if known else n * per_chunk for _, n, known in self.arrivals) / min(RECENT_S, elapsed)
        return Progress(phase or self.phase, ok, failed, len(self.active), self.total, elapsed, self.duration,
                        round(tokens_f), tokens_f / elapsed if elapsed > 0 else None, recent)


ProgressCallback = Callable[[Progress], None]
