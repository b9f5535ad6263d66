"""The phase timeline: loading → KV cache → CUDA graphs → ready → serving (→ crashed / stopped), per launch,
across relaunches, with durations. Pure: records and times are handed in (the controller feeds it).

Steps follow core's phase machine (core.log.metrics) record by record, forward only within a launch
(an EAGLE draft's own weights and graphs, logged after the target's, stay in the step reached); KV cache
is split out of loading: it starts when the target's weights are in. The batch's snapshot phase is
authoritative: a step the records did not show is added from it.

Durations: the log's timestamps (one-second resolution) when they show a longer span than the arrival
times — a backfilled start-up arrives all at once — else the wall clock at arrival.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from spectui.core.log import DecodeSample, ErrorEvent, Milestone, MilestoneKind, PrefillSample

ORDER = ("starting", "loading", "kv", "graphs", "ready", "serving")
LABELS = {"starting": "starting", "loading": "loading", "kv": "KV cache", "graphs": "CUDA graphs",
          "ready": "ready", "serving": "serving", "crashed": "crashed", "stopped": "stopped",
          "gone": "gone (no shutdown line)"}
_FROM_PHASE = {"starting": "starting", "loading": "loading", "capturing": "graphs", "ready": "ready",
               "serving": "serving", "crashed": "crashed", "stopped": "stopped"}
_STEP_OF = {
    MilestoneKind.DIST_INIT: "loading", MilestoneKind.WEIGHTS_BEGIN: "loading",
    MilestoneKind.WEIGHTS_LOADED: "kv", MilestoneKind.KV_ALLOCATED: "kv", MilestoneKind.MEMORY_POOL_END: "kv",
    MilestoneKind.GRAPH_CAPTURE_BEGIN: "graphs", MilestoneKind.FIRED_UP: "ready",
}
MAX_STEPS = 200
FINAL = ("crashed", "stopped", "gone")  # a launch's end: the next record starts a new launch


def ts_seconds(ts: str | None) -> int | None:
    """Seconds since midnight of a log timestamp ("2025-12-03 10:00:05", "10:00:05", RFC3339), or None."""
    if not ts or len(ts) < 8:
        return None
    t = ts[-8:] if ts[-3:-2] == ":" else ts.replace("T", " ").split(" ")[-1][:8]
    try:
        return int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Step:
    name: str  # a key of LABELS
    launch: int  # 1-based launch number in this session
    wall: float  # arrival time (the caller's clock)
    ts: int | None  # log time, seconds of day
    end_wall: float | None = None  # None: the step is current
    end_ts: int | None = None

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    @property
    def final(self) -> bool:
        return self.name in FINAL

    def duration(self, now: float, last: tuple[float, int | None] | None = None) -> float:
        """Seconds spent in this step (up to `now` for the current one; `last` = latest (wall, ts) seen)."""
        end_wall, end_ts = self.end_wall, self.end_ts
        if end_wall is None:
            end_wall = now
            if last is not None and last[1] is not None and self.ts is not None:
                end_ts = last[1] + int(now - last[0])
        wall = max(0.0, end_wall - self.wall)
        if self.ts is not None and end_ts is not None:
            log = (end_ts - self.ts) % 86400
            if log >= 2 and log > wall:
                return float(log)
        return wall


class PhaseTimeline:
    """Steps of every launch seen; `steps` is an immutable tuple, safe to read from another thread."""

    def __init__(self) -> None:
        self.steps: tuple[Step, ...] = ()
        self.launch = 0
        self.last: tuple[float, int | None] | None = None

    @property
    def current(self) -> Step | None:
        return self.steps[-1] if self.steps and self.steps[-1].end_wall is None else None

    def _cur_name(self) -> str | None:
        if not self.steps or self.steps[-1].launch != self.launch:
            return None
        return self.steps[-1].name

    def _enter(self, name: str, wall: float, ts: int | None, *, new_launch: bool = False) -> None:
        steps = list(self.steps)
        if new_launch or self.launch == 0:
            self.launch += 1
        if steps and steps[-1].end_wall is None:
            steps[-1] = Step(steps[-1].name, steps[-1].launch, steps[-1].wall, steps[-1].ts, wall, ts)
        steps.append(Step(name, self.launch, wall, ts))
        self.steps = tuple(steps[-MAX_STEPS:])

    def advance(self, name: str, wall: float, ts: int | None) -> None:
        """Move to step `name` if it is ahead of the current one (or final); a new launch after a final step."""
        cur = self._cur_name()
        if cur == name:
            return
        if cur in FINAL:
            if name in FINAL:
                return
            self._enter(name, wall, ts, new_launch=True)
            return
        if name in FINAL or cur is None or ORDER.index(name) > ORDER.index(cur):
            self._enter(name, wall, ts)

    def observe(self, records: Iterable[Any], phase: str | None, wall: float) -> None:
        """One batch of records (in order) and the snapshot's phase after it, all arrived at `wall`."""
        ts = None
        for rec in records:
            ts = ts_seconds(getattr(getattr(rec, "ctx", None), "ts", None)) or ts
            step = None
            if isinstance(rec, Milestone):
                if rec.kind is MilestoneKind.SERVER_ARGS:
                    cur = self._cur_name()
                    if cur is not None and cur != "starting":
                        self._enter("starting", wall, ts, new_launch=True)  # a launch appended to the same log
                    elif cur is None:
                        self.advance("starting", wall, ts)
                    continue
                step = "stopped" if rec.kind is MilestoneKind.SHUTDOWN else _STEP_OF.get(rec.kind)
            elif isinstance(rec, DecodeSample) or (isinstance(rec, PrefillSample) and self._cur_name() == "ready"):
                step = "serving"  # a prefill before "fired up" is SGLang's warm-up request
            elif isinstance(rec, ErrorEvent) and rec.fatal:
                step = "crashed" if self._cur_name() != "stopped" else None
            if step is not None:
                self.advance(step, wall, ts)
        if ts is not None or self.last is None:
            self.last = (wall, ts if ts is not None else (self.last[1] if self.last else None))
        target = _FROM_PHASE.get(phase or "")
        if target == "serving" and self._cur_name() in ("kv", "graphs", "loading"):
            target = None  # core counts the warm-up prefill as serving; "fired up" decides
        if target and target != "starting" and self._cur_name() != "gone":  # the old log's phase is history
            self.advance(target, wall, ts)

    def gone(self, wall: float) -> None:
        """The server's process is gone with no shutdown line or crash in its log (kill -9, the OOM killer):
        the current step ends here and stops counting; a later record starts the next launch."""
        if self._cur_name() not in (None, *FINAL):
            self._enter("gone", wall, self.last[1] if self.last else None)

    def relaunched(self, wall: float) -> None:
        """The followed server was replaced: the current launch ends here; the next record starts launch n+1."""
        steps = list(self.steps)
        if steps and steps[-1].end_wall is None:
            s = steps[-1]
            steps[-1] = Step(s.name, s.launch, s.wall, s.ts, wall, self.last[1] if self.last else None)
            self.steps = tuple(steps)
        self.launch += 1
        self.last = None
