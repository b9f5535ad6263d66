"""Pipeline: parser + metrics + (optionally) the rule engine — the same path for check, watch, demo and the TUI."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from spectui.core.log.metrics import MetricSnapshot, MetricsTracker, ServerPhase
from spectui.core.log.parse import LogParser
from spectui.core.log.records import Record


class Engine(Protocol):
    """What Pipeline needs from spectui.core.rules.engine.RuleEngine (typed loosely so either can land first)."""

    def feed(self, records: Sequence[Record], snapshot: MetricSnapshot) -> list[Any]: ...

    @property
    def diagnoses(self) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class PipelineUpdate:
    records: tuple[Record, ...]
    snapshot: MetricSnapshot
    diagnoses: tuple[Any, ...]  # new or updated Diagnosis objects from the engine
    phase_changed: bool
    previous_phase: ServerPhase
    new_launch: bool  # a launch started inside this batch (the engine was told: new_launch())


class Pipeline:
    def __init__(self, *, engine: Engine | None = None, first_line: int = 1, keep_other: bool = False,
                 window: int = 200, bulk: bool = False) -> None:
        self.parser = LogParser(first_line=first_line, keep_other=keep_other, bulk=bulk,
                                bulk_tail=max(window, 300) + 10)
        self.metrics = MetricsTracker(window=window)
        self.engine = engine
        self._snapshot = self.metrics.snapshot()

    @property
    def snapshot(self) -> MetricSnapshot:
        return self._snapshot

    @property
    def diagnoses(self) -> list[Any]:
        return list(self.engine.diagnoses) if self.engine is not None else []

    def feed_lines(self, lines: Iterable[str]) -> PipelineUpdate:
        return self._apply(self.parser.feed(lines))

    def feed_bytes(self, chunk: bytes) -> PipelineUpdate:
        return self._apply(self.parser.feed_bytes(chunk))

    def flush(self) -> PipelineUpdate:
        return self._apply(self.parser.flush())

    def finish(self) -> PipelineUpdate:
        return self._apply(self.parser.finish())

    def _apply(self, records: list[Record]) -> PipelineUpdate:
        before = self._snapshot
        diagnoses: list[Any] = []
        new_launch = False
        if records and self.engine is None:
            launches = self.metrics.launches
            self.metrics.update(records)
            new_launch = bool(launches) and self.metrics.launches != launches
            self._snapshot = self.metrics.snapshot()
        elif records:
            # Feed the engine launch by launch so a relaunch clears diagnoses at the right record.
            start = 0
            for i, rec in enumerate(records):
                launches = self.metrics.launches
                self.metrics.update((rec,))
                if self.metrics.launches != launches and launches:
                    new_launch = True
                    if self.engine is not None:
                        if i > start:
                            diagnoses.extend(self.engine.feed(records[start:i], before))
                        reset = getattr(self.engine, "new_launch", None)
                        if reset is not None:
                            reset()
                    start = i
            self._snapshot = self.metrics.snapshot()
            if self.engine is not None and start < len(records):
                diagnoses.extend(self.engine.feed(records[start:], self._snapshot))
        snap = self._snapshot
        return PipelineUpdate(
            records=tuple(records),
            snapshot=snap,
            diagnoses=tuple(diagnoses),
            phase_changed=snap.phase != before.phase or snap.launch != before.launch,
            previous_phase=before.phase,
            new_launch=new_launch,
        )
