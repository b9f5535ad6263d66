"""Cockpit controller: runs batches of log lines through core's Pipeline and turns the result into view values.

No Textual here and no I/O: the app's worker hands it lines and gets back a `CockpitUpdate`; the
same object is driven directly by tests and by perf/perf_ui.py. One controller spans relaunches:
`new_stream()` starts a fresh pipeline for the new log while the plots keep the old launch's points
with a boundary between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.core.log import ErrorEvent, Milestone, MilestoneKind, record_kind
from spectui.ui.model import ConfigView, LaunchSummary, SeriesHistory, build_config_view
from spectui.ui.phases import PhaseTimeline

MAX_POINTS = 400  # plot points kept per launch (a plot is at most ~150 cells wide)


@dataclass(frozen=True, slots=True)
class CockpitUpdate:
    kinds: tuple[tuple[int, int, str], ...] = ()  # (first view line, last view line, kind)
    snapshot: Any = None
    diagnoses: tuple[Any, ...] = ()
    new_diagnoses: tuple[Any, ...] = ()
    config: ConfigView = field(default_factory=ConfigView)
    history: SeriesHistory = field(default_factory=SeriesHistory)
    dp_ranks: int = 1
    launched: str | None = None
    version: str | None = None
    baseline: Any = None  # no-spec decode tok/s (core.rules.match.BaselineTps when its concurrency is known)


class Cockpit:
    """State that outlives one log stream: pipeline per stream, plot history, launch summaries."""

    def __init__(self, *, launch: Any = None, version: str | None = None, rules: Sequence[Any] | None = None,
                 catalogue: Any = None, baseline_tps: float | None = None,
                 baseline_source: str | None = None) -> None:
        self.baseline = baseline_tps  # no-spec tok/s: the spec panel's ×N and the slower-than-baseline rule
        self.baseline_source = baseline_source if baseline_tps is not None else None
        self.launch = launch  # core.launch.LaunchCommand of the running server, when known
        self.version = version  # SGLang version (bundled catalogue name) when known
        # (FlagCatalogue, CataloguePick) from sources.hostflags_run: the host's own SGLang flags for a
        # release spectui does not ship; None: the bundled pick for `version`.
        self.catalogue = catalogue
        self._rules = rules
        self.rule_errors: tuple[str, ...] = ()
        self._archived: list[tuple[tuple[float | None, ...], tuple[float | None, ...]]] = []
        self.launches: list[LaunchSummary] = []
        self.offset = 0  # view line number = stream line number + offset
        self._requested: dict[str, Any] | None = None
        self._predicted: dict[str, Any] | None = None
        self._warnings: tuple[str, ...] = ()
        self._problem = ""
        self.timeline = PhaseTimeline()  # phases with durations, across relaunches (ui/phases.py)
        self._resolve_launch()
        self._new_pipeline()

    # ---- set-up ------------------------------------------------------------------------------

    def _resolve_launch(self) -> None:
        self._requested = self._predicted = None
        self._warnings, self._problem = (), ""
        if self.launch is None:
            return
        from spectui.core.launch import pick_version, resolvable_args, resolve

        args = list(resolvable_args(self.launch))  # the simulator's --sim-* knobs are not SGLang's
        cat, pick = self.catalogue if self.catalogue is not None else (None, None)
        if cat is not None and pick is not None and pick.source == "host":
            res = resolve(args, self.version or cat.version, host_catalogue=cat)
        else:
            res = resolve(args, pick_version(self.version)[0])
        self.resolution = res
        self._requested = dict(res.requested)
        self._predicted = dict(res.effective) if res.effective else None
        self._warnings = tuple(res.warnings)
        if res.argparse_error and not res.requested:
            # The server runs, yet this release's argparse rejects its command (flags spectui's catalogue
            # lacks): the requested values as typed, the effective ones from the log's server_args line.
            from spectui.core.rules import crude_requested

            self._requested = crude_requested(args)
            self._problem = f"SGLang {res.version}'s flags reject the command ({res.argparse_error}): " \
                            "requested as typed, effective from the log"

    def _new_pipeline(self) -> None:
        from spectui.core.log import Pipeline
        from spectui.core.rules import RuleEngine

        rules = self._rules
        if rules is None:
            rules = self._rules = self._load_rules()
        engine = RuleEngine(rules, launch=self.launch, resolution=getattr(self, "resolution", None),
                            version=self.version, baseline_tps=self.baseline)
        self.pipeline = Pipeline(engine=engine)
        self._snapshot: Any = None
        self._launch_no = 0
        self._launched: str | None = None
        self._dp_ranks: set[int] = set()
        self._diagnoses: tuple[Any, ...] = ()

    def _load_rules(self) -> list[Any]:
        from spectui.core.rules import engine as rules_mod

        loaded, errors = rules_mod.load_rules()
        self.rule_errors = tuple(errors)  # shown by the app as a notification; a bad rule file is not fatal
        return list(loaded)

    def set_baseline(self, tps: float | None, source: str | None) -> None:
        """A baseline learnt while running (a bench from the screen): shown and judged from the next batch."""
        self.baseline, self.baseline_source = tps, (source if tps is not None else None)
        engine = self.pipeline_engine
        config = getattr(engine, "_config", None)
        if config is not None:  # the engine reads it on every evaluation; re-judge the config rules too
            config.baseline_given = tps
            engine._config_dirty = True

    def new_stream(self, *, launch: Any = None, view_last_line: int = 0, now: float | None = None) -> None:
        """The server was relaunched and a new log is followed: archive plots, start a fresh pipeline."""
        self._archive_current()
        self.timeline.relaunched(_now(now))
        if launch is not None:
            self.launch = launch
            self._resolve_launch()
        self.offset = view_last_line
        self._new_pipeline()

    def _archive_current(self) -> None:
        s = self._snapshot
        if s is None or not s.samples:
            return
        self._archived.append(self._points(s))
        self.launches.append(self._summary(s, f"launch {len(self.launches) + 1}"))

    def _summary(self, s: Any, label: str) -> LaunchSummary:
        return LaunchSummary(
            label=label,
            first_line=(s.launch_first_line + self.offset) if s.launch_first_line else None,
            samples=s.samples,
            accept_len_mean=s.accept_len.mean,
            accept_len_p10=s.accept_len.p10,
            accept_len_p90=s.accept_len.p90,
            gen_tokens_per_s_mean=s.gen_tokens_per_s.mean,
            settings={k: v for k, v in (s.server_args or {}).items() if k.startswith("speculative_")},
        )

    @staticmethod
    def _points(s: Any) -> tuple[tuple[float | None, ...], tuple[float | None, ...]]:
        series = s.series[-MAX_POINTS:]
        return tuple(p[1] for p in series), tuple(p[2] for p in series)

    # ---- feeding -----------------------------------------------------------------------------

    def feed(self, lines: Sequence[str], now: float | None = None, first_line: int | None = None) -> CockpitUpdate:
        """`first_line`: the stream's number of lines[0] when known (a tail that starts mid-file), so that
        records, kinds and evidence carry the numbers the log pane shows."""
        if first_line is not None and first_line != self.pipeline.parser.next_line:
            self.pipeline.parser.skip_to(first_line)
        return self._absorb(self.pipeline.feed_lines(lines), now)

    def finish(self, now: float | None = None) -> CockpitUpdate:
        return self._absorb(self.pipeline.finish(), now)

    def flush(self) -> CockpitUpdate:
        """The log went quiet: emit a traceback still waiting for its end (a crash is often the last thing)."""
        return self._absorb(self.pipeline.flush())

    def _absorb(self, update: Any, now: float | None = None) -> CockpitUpdate:
        kinds: list[tuple[int, int, str]] = []
        off = self.offset
        for r in update.records:
            kind = record_kind(r).value
            last = r.end_line if isinstance(r, ErrorEvent) and r.end_line else r.line
            kinds.append((r.line + off, last + off, kind))
            if isinstance(r, Milestone) and r.kind == MilestoneKind.SERVER_ARGS:
                self._launched = r.ctx.ts
            dp = getattr(r.ctx, "dp_rank", None)
            if dp is not None and record_kind(r).value == "decode":
                self._dp_ranks.add(dp)
        snap = update.snapshot
        if self._snapshot is not None and snap is not None and snap.launch != self._snapshot.launch:
            self._archive_current()  # a second launch appended to the same log
        self._snapshot = snap
        if update.records or snap is not None:
            self.timeline.observe(update.records, getattr(getattr(snap, "phase", None), "value", None), _now(now))
        engine = self.pipeline_engine
        self._diagnoses = tuple(engine.diagnoses) if engine is not None else tuple(update.diagnoses)
        return CockpitUpdate(
            kinds=tuple(kinds),
            snapshot=snap,
            diagnoses=self._diagnoses,
            new_diagnoses=tuple(update.diagnoses),
            config=self.config_view(),
            history=self.history(),
            dp_ranks=max(1, len(self._dp_ranks)),
            launched=self._launched,
            version=self.version or self._version_guess(),
            baseline=self.baseline,
        )

    @property
    def pipeline_engine(self) -> Any:
        return getattr(self.pipeline, "engine", None)

    def _version_guess(self) -> str | None:
        parser = getattr(self.pipeline, "parser", None)
        if parser is None:
            return None
        from spectui.core.log import guess_version

        return guess_version(parser.version_hints)

    # ---- views -------------------------------------------------------------------------------

    def config_view(self) -> ConfigView:
        log_effective = None
        if self._snapshot is not None and self._snapshot.server_args:
            log_effective = dict(self._snapshot.server_args)
        return build_config_view(self._requested, log_effective, self._predicted, self._warnings, self._problem)

    def history(self) -> SeriesHistory:
        segments = list(self._archived)
        if self._snapshot is not None and self._snapshot.samples:
            segments.append(self._points(self._snapshot))
        return SeriesHistory(tuple(a for a, _ in segments), tuple(t for _, t in segments))

    def launch_summaries(self) -> list[LaunchSummary]:
        current = []
        s = self._snapshot
        if s is not None and s.samples:
            current.append(self._summary(s, f"launch {len(self.launches) + 1} (current)"))
        return self.launches + current

    @property
    def diagnoses(self) -> tuple[Any, ...]:
        return self._diagnoses

    @property
    def snapshot(self) -> Any:
        return self._snapshot


def _now(now: float | None) -> float:
    import time

    return time.monotonic() if now is None else now  # arrival time for the phase timeline
