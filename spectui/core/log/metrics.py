"""Rolling metrics over decode samples, the server phase machine, and launch boundaries.

Windows are bounded (memory stays flat with log size). Throughput and request counts are summed across
DP ranks of the same interval; accept length is a per-line statistic. A new launch (server_args line, a
fresh start-up after the server served, stopped or crashed) starts fresh windows: launches are never
averaged together.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from spectui.core.log.records import (
    DecodeSample,
    ErrorEvent,
    Milestone,
    MilestoneKind,
    PrefillSample,
    Record,
    WarningEvent,
)
from spectui.core.log.serverargs import prefer_server_args


class ServerPhase(StrEnum):
    STARTING = "starting"
    LOADING = "loading"
    CAPTURING = "capturing"
    READY = "ready"
    SERVING = "serving"
    CRASHED = "crashed"
    STOPPED = "stopped"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Stat:
    last: float | None = None
    mean: float | None = None
    p10: float | None = None
    p90: float | None = None


@dataclass(frozen=True, slots=True)
class MetricSnapshot:
    launch: int  # 1-based index of the current launch in this stream (0 = none seen)
    launch_first_line: int | None
    phase: ServerPhase
    samples: int  # decode lines in the current launch
    accept_len: Stat
    accept_rate: Stat
    gen_tokens_per_s: Stat  # summed across DP ranks for the same interval
    running_req: int | None
    queue_req: int | None
    token_usage: float | None
    graph: bool | None
    series: tuple[tuple[int, float | None, float | None], ...]  # (line, accept_len, gen tok/s) per interval
    server_args: Mapping[str, object] | None
    last_line: int
    prefill_samples: int = 0
    errors: int = 0  # error events in the current launch
    warnings: int = 0


EMPTY_SNAPSHOT = MetricSnapshot(0, None, ServerPhase.UNKNOWN, 0, Stat(), Stat(), Stat(), None, None, None, None,
                                (), None, 0)

_LOADING = {MilestoneKind.DIST_INIT, MilestoneKind.WEIGHTS_BEGIN, MilestoneKind.WEIGHTS_LOADED,
            MilestoneKind.DRAFT_WEIGHTS_LOADED, MilestoneKind.KV_ALLOCATED, MilestoneKind.MEMORY_POOL_END}
_UP = {ServerPhase.READY, ServerPhase.SERVING, ServerPhase.STOPPED}
# 0.5.23's Engine(...) API logs server_args= before resolution (parsed values) and again after it; only
# resolution warnings come between the two.
_ARGS_PAIR_LINES = 40
_CRASH_SETTLE_LINES = 20  # other ranks keep logging start-up lines for a moment after one rank crashed
_SERIES_LEN = 300
MAX_LAUNCHES_KEPT = 1000  # snapshot_all() keeps the most recent launches


def _stat(values: deque[float], last: float | None) -> Stat:
    if not values:
        return Stat(last, None, None, None)
    ordered = sorted(values)
    n = len(ordered)

    def pct(p: float) -> float:
        pos = p * (n - 1)
        lo = int(pos)
        hi = min(lo + 1, n - 1)
        return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 4)

    return Stat(last, round(sum(ordered) / n, 4), pct(0.10), pct(0.90))


def _seconds(ts: str | None) -> int | None:
    if not ts or len(ts) < 8:
        return None
    t = ts[-8:] if ts[-3:-2] == ":" else ts.split(" ")[-1][:8]
    try:
        return int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
    except ValueError:
        return None


class _Launch:
    """Mutable per-launch state; only MetricsTracker touches it."""

    def __init__(self, index: int, first_line: int, window: int) -> None:
        self.index = index
        self.first_line = first_line
        self.phase = ServerPhase.STARTING
        self.reached_up = False
        self.crash_line = 0
        self.samples = self.prefill_samples = self.errors = self.warnings = 0
        self.accept_len: deque[float] = deque(maxlen=window)
        self.accept_rate: deque[float] = deque(maxlen=window)
        self.tps: deque[float] = deque(maxlen=window)
        self.series: deque[tuple[int, float | None, float | None]] = deque(maxlen=_SERIES_LEN)
        self.last_accept_len: float | None = None
        self.last_accept_rate: float | None = None
        self.running_req: int | None = None
        self.queue_req: int | None = None
        self.token_usage: float | None = None
        self.graph: bool | None = None
        self.server_args: Mapping[str, object] | None = None
        self.server_args_line = 0
        self.last_line = first_line
        # the DP interval being summed: rank -> sample
        self.group: dict[int, DecodeSample] = {}
        self.group_t: int | None = None

    def decode(self, s: DecodeSample) -> None:
        self.samples += 1 + s.skipped_decode
        self.prefill_samples += s.skipped_prefill
        if s.accept_len is not None:
            self.accept_len.append(s.accept_len)
            self.last_accept_len = s.accept_len
        if s.accept_rate is not None:
            self.accept_rate.append(s.accept_rate)
            self.last_accept_rate = s.accept_rate
        if s.token_usage is not None:
            self.token_usage = s.token_usage
        if s.graph is not None:
            self.graph = s.graph
        rank = s.ctx.dp_rank
        t = _seconds(s.ctx.ts)
        same_interval = (
            rank is not None and self.group and rank not in self.group
            and (t is None or self.group_t is None or abs(t - self.group_t) <= 2)
        )
        if not same_interval:
            self.group = {}
            self.group_t = t
        self.group[rank if rank is not None else -1] = s
        if t is not None:
            self.group_t = t
        members = self.group.values()
        tps = [m.gen_tokens_per_s for m in members if m.gen_tokens_per_s is not None]
        acc = [m.accept_len for m in members if m.accept_len is not None]
        run = [m.running_req for m in members if m.running_req is not None]
        queue = [m.queue_req for m in members if m.queue_req is not None]
        tps_sum = round(sum(tps), 4) if tps else None
        acc_mean = round(sum(acc) / len(acc), 4) if acc else None
        self.running_req = sum(run) if run else self.running_req
        self.queue_req = sum(queue) if queue else self.queue_req
        point = (s.line, acc_mean, tps_sum)
        if same_interval:
            if tps_sum is not None:
                if self.tps:
                    self.tps[-1] = tps_sum
                else:
                    self.tps.append(tps_sum)
            if self.series:
                self.series[-1] = point
        else:
            if tps_sum is not None:
                self.tps.append(tps_sum)
            self.series.append(point)

    def snapshot(self) -> MetricSnapshot:
        return MetricSnapshot(
            launch=self.index,
            launch_first_line=self.first_line,
            phase=self.phase,
            samples=self.samples,
            accept_len=_stat(self.accept_len, self.last_accept_len),
            accept_rate=_stat(self.accept_rate, self.last_accept_rate),
            gen_tokens_per_s=_stat(self.tps, self.tps[-1] if self.tps else None),
            running_req=self.running_req,
            queue_req=self.queue_req,
            token_usage=self.token_usage,
            graph=self.graph,
            series=tuple(self.series),
            server_args=self.server_args,
            last_line=self.last_line,
            prefill_samples=self.prefill_samples,
            errors=self.errors,
            warnings=self.warnings,
        )


class MetricsTracker:
    """Feed records in stream order; read snapshots of the current launch (or of every launch)."""

    def __init__(self, *, window: int = 200) -> None:
        self.window = window
        self._done: list[MetricSnapshot] = []
        self._cur: _Launch | None = None

    @property
    def launches(self) -> int:
        return self._cur.index if self._cur else 0

    def _new_launch(self, line: int) -> _Launch:
        index = 1
        if self._cur is not None:
            index = self._cur.index + 1
            self._done.append(self._cur.snapshot())
            if len(self._done) > MAX_LAUNCHES_KEPT:  # a crash-looping server: keep memory flat
                del self._done[0]
        self._cur = _Launch(index, line, self.window)
        return self._cur

    def _starts_launch(self, cur: _Launch | None, rec: Record) -> bool:
        if cur is None:
            return True
        phase = cur.phase
        fresh = phase is ServerPhase.STARTING and cur.server_args is None and cur.samples == 0
        settled_crash = phase is ServerPhase.CRASHED and (
            cur.reached_up or rec.line - cur.crash_line > _CRASH_SETTLE_LINES
        )
        if isinstance(rec, Milestone):
            kind = rec.kind
            if kind is MilestoneKind.SERVER_ARGS:  # a second line right after the first is the same launch
                pair = cur.samples == 0 and rec.line - cur.server_args_line <= _ARGS_PAIR_LINES
                return not (phase is ServerPhase.STARTING and (cur.server_args is None or pair))
            if kind is MilestoneKind.ARGPARSE_USAGE:
                return not fresh
            if kind in (MilestoneKind.WEIGHTS_BEGIN, MilestoneKind.DIST_INIT):
                return phase in _UP or settled_crash
            return False
        if isinstance(rec, WarningEvent) and rec.category == "resolution":
            return phase in _UP or settled_crash
        if isinstance(rec, ErrorEvent) and rec.exc_type == "ArgparseError":
            return phase is not ServerPhase.STARTING or cur.server_args is not None
        return False

    def update(self, records: Sequence[Record]) -> None:
        for rec in records:
            cur = self._cur
            if isinstance(rec, DecodeSample):
                if cur is None:
                    cur = self._new_launch(rec.line)
                cur.decode(rec)
                if cur.phase not in (ServerPhase.CRASHED, ServerPhase.STOPPED):
                    cur.phase = ServerPhase.SERVING
                    cur.reached_up = True
                cur.last_line = rec.line
                continue
            if self._starts_launch(cur, rec):
                cur = self._new_launch(rec.line)
            assert cur is not None
            cur.last_line = max(cur.last_line, getattr(rec, "end_line", 0) or rec.line)
            if isinstance(rec, PrefillSample):
                cur.prefill_samples += 1 + rec.skipped_prefill
                cur.samples += rec.skipped_decode
                if cur.phase not in (ServerPhase.CRASHED, ServerPhase.STOPPED):
                    cur.phase = ServerPhase.SERVING
                    cur.reached_up = True
            elif isinstance(rec, Milestone):
                self._milestone(cur, rec)
            elif isinstance(rec, ErrorEvent):
                cur.errors += 1
                if rec.fatal and cur.phase is not ServerPhase.STOPPED:
                    if cur.phase is not ServerPhase.CRASHED:
                        cur.crash_line = rec.line
                    cur.phase = ServerPhase.CRASHED
            elif isinstance(rec, WarningEvent):
                cur.warnings += 1

    def _milestone(self, cur: _Launch, rec: Milestone) -> None:
        kind = rec.kind
        if kind is MilestoneKind.SERVER_ARGS:
            cur.server_args = prefer_server_args(cur.server_args, rec.detail)  # the resolved one of a pair
            cur.server_args_line = rec.line
        if cur.phase in (ServerPhase.CRASHED, ServerPhase.STOPPED):
            return
        if kind in _LOADING:
            if cur.phase in (ServerPhase.STARTING, ServerPhase.CAPTURING, ServerPhase.UNKNOWN):
                cur.phase = ServerPhase.LOADING
        elif kind is MilestoneKind.GRAPH_CAPTURE_BEGIN:
            if cur.phase in (ServerPhase.STARTING, ServerPhase.LOADING):
                cur.phase = ServerPhase.CAPTURING
        elif kind is MilestoneKind.FIRED_UP:
            if cur.phase is not ServerPhase.SERVING:
                cur.phase = ServerPhase.READY
            cur.reached_up = True
        elif kind is MilestoneKind.SHUTDOWN:
            cur.phase = ServerPhase.STOPPED

    def snapshot(self) -> MetricSnapshot:
        return self._cur.snapshot() if self._cur is not None else EMPTY_SNAPSHOT

    def snapshot_all(self) -> list[MetricSnapshot]:
        """One per launch seen (the last MAX_LAUNCHES_KEPT + 1), oldest first."""
        if self._cur is None:
            return []
        return [*self._done, self._cur.snapshot()]
