"""The dashboard: header, speculative + config panels, diagnoses, log pane, GPU strip; log keys live here.

Data flow (docs/DESIGN.md, "How data flows"): a worker reads tail events and only appends lines to a pending list; a timer
flushes at most every FLUSH_INTERVAL (or at once past FLUSH_LINES) through the controller and pushes
frozen view values into the widgets. There is never a message or a refresh per log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Input

from spectui.sources.base import TailLines, TailState
from spectui.ui.analysis import analyse_batch
from spectui.ui.controller import Cockpit, CockpitUpdate
from spectui.ui.messages import RelaunchFinished
from spectui.ui.mixins.logkeys import LogKeys
from spectui.ui.mixins.serverwatch import ServerWatch
from spectui.ui.model import HeaderInfo
from spectui.ui.session import Session
from spectui.ui.widgets.config_panel import ConfigPanel
from spectui.ui.widgets.diagnoses import DiagnosesPanel
from spectui.ui.widgets.gpu_strip import NVIDIA_SMI_ARGV, GpuStrip, parse_nvidia_smi
from spectui.ui.widgets.header import HeaderBar, age_step
from spectui.ui.widgets.log_view import LogView
from spectui.ui.widgets.spec_panel import SpecData, SpecPanel
from spectui.ui.widgets.timeline import PhaseTimelineBar

# At most five log repaints a second: each repaints the whole pane, and under a 5k lines/s log halving
# them took bench_ui's p95 key latency from ~100 ms to ~60 ms (a line still shows within 0.2 s).
FLUSH_INTERVAL = 0.2  # seconds
PANEL_INTERVAL = 0.25  # seconds: the panels (speculative, config, diagnoses) at most four times a second
FLUSH_LINES = 2000  # flush at once when this many lines are waiting (above 10k lines/s)
MAX_LINES_PER_FLUSH = 5000  # a big backlog is taken in several flushes
# Lines read but not yet parsed, at most (memory stays bounded when the parse falls behind, e.g. hidden tabs
# on a loaded machine): past it the tail is not read until half is parsed; the backlog waits in the log
# file on the host (tails read by offset), so nothing is lost.
MAX_PENDING_LINES = 20_000
GPU_POLL_INTERVAL = 5.0
IDLE_FLUSH_S = 1.0  # a log quiet this long: emit a traceback that is waiting for its end
# While the parse thread runs (~50 us a line: a quarter of a core at 5k lines/s) the event loop waits for the
# GIL after each of its waits, up to the switch interval each time (5 ms by default), and a key's handling
# takes several: at 1 ms, perf_ui's p95 key latency under a 5k lines/s log went from ~70-100 ms to ~50-75.
GIL_SWITCH_S = 0.001


class DashboardScreen(ServerWatch, LogKeys, Screen):  # ServerWatch brings StaleWatch (stalewatch.py)
    BINDINGS = [
        Binding("space", "toggle_follow", "Pause", show=False),  # the log title says it
        Binding("slash", "prompt('search')", "Search"),
        Binding("n", "find(False)", "Next", show=False),
        Binding("N", "find(True)", "Prev", show=False),
        Binding("backslash", "prompt('filter')", "Filter"),
        Binding("e", "error(False)", "Error"),
        Binding("E", "error(True)", "Prev error", show=False),
        Binding("p", "toggle_probes", "Probes", show=False),  # the title names p when any are held
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end,F", "bottom", "Follow", show=False),
        Binding("y", "copy", "Copy", show=False),
        Binding("d", "focus('diagnoses')", "Diagnoses", show=False),
        Binding("l", "focus('log')", "Log", show=False),
        Binding("escape", "close_prompt", "Close", show=False),
    ]

    def __init__(self, session: Session, cockpit: Cockpit, *, clock: Callable[[], float] = time.monotonic,
                 max_log_lines: int = 50_000) -> None:
        super().__init__()
        self.session = session
        self.cockpit = cockpit
        self.clock = clock
        self.max_log_lines = max_log_lines
        self._pending: list[tuple[int, tuple[str, ...], bool]] = []  # (first line, lines, header)
        self._pending_count = 0
        self._flush_timer: Any = None
        self._last_line_at: float | None = None
        self.connection = "connecting"
        self._prompt_mode = "search"
        self.last_update: CockpitUpdate | None = None
        self.log_path = session.log_path
        self.tail_done = False
        self.processing = False  # a batch is being parsed in a worker thread
        self.finished = False  # a replayed log has been read to its end and finished
        self.gpu_note = ""  # what the GPU probe found ("ok", or why there is no strip)
        self._idle_flushed = False
        self._panel_timer: Any = None
        self._panels_at = 0.0  # time.monotonic() of the last panel update (throttling, not display)
        self._panels_of: CockpitUpdate | None = None

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield PhaseTimelineBar(id="timeline")
        with Horizontal(id="top"):
            yield SpecPanel(id="spec")
            yield ConfigPanel(id="config")
        yield DiagnosesPanel(id="diagnoses")
        yield LogView(id="log", max_lines=self.max_log_lines)
        yield Input(id="prompt")
        yield GpuStrip(id="gpus")
        yield Footer(show_command_palette=False, compact=True)  # compact: the keys fit 100 columns

    def on_mount(self) -> None:
        import sys

        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_S))  # the UI thread gets the GIL back sooner
        self.query_one("#spec").border_title = "speculative"
        self.query_one(DiagnosesPanel).border_title = "diagnoses"
        self.query_one(DiagnosesPanel).set_diagnoses([])
        self._update_log_title()
        self.query_one(LogView).focus()
        self._refresh_header()
        self.set_interval(1.0, self._tick)
        if self.log_path:
            self.follow(self.log_path)
        if self.session.probe_gpus and self.session.host is not None:
            self.poll_gpus()
        self.start_server_watch()  # liveness + successor (serverwatch.py); not for a file or a replay

    def on_resize(self) -> None:
        self.set_class(self.size.width >= 140, "-wide")

    # ---- following -------------------------------------------------------------------------------

    @work(exclusive=True, group="tail")
    async def follow(self, path: str, from_start: bool | None = None) -> None:
        """Read tail events into the pending list (flushed by a timer); `from_start`: a new launch's log."""
        self.tail_done = False
        try:
            async for event in self.session.open_tail(path, from_start=from_start):
                if isinstance(event, TailState):
                    self.connection = str(event.state.value if hasattr(event.state, "value") else event.state)
                    self._refresh_header()
                elif isinstance(event, TailLines) and event.lines:
                    self._pending.append((event.first_line, event.lines, event.header))
                    self._pending_count += len(event.lines)
                    self._last_line_at = self.clock()
                    self._idle_flushed = False
                    self._schedule_flush()
                    if self._pending_count > MAX_PENDING_LINES:  # read again once half the backlog is parsed
                        while self._pending_count > MAX_PENDING_LINES // 2:
                            await asyncio.sleep(0.05)
        except Exception as exc:  # noqa: BLE001 - the screen stays up with what it has, and says why
            self.connection = "lost"
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.notify(f"stopped following {path}: {first}", severity="error", timeout=30, markup=False)
        self.tail_done = True
        if self.session.replay:
            self.connection = "replay"
        self._schedule_flush()

    def _tick(self) -> None:
        """Once a second: the header's age, and an idle flush when the log has gone quiet."""
        self._refresh_header()
        self._show_timeline()
        self.stale_tick()
        quiet = self._last_line_at is not None and self.clock() - self._last_line_at >= IDLE_FLUSH_S
        if quiet and not self._idle_flushed and not self.processing and not self._pending:
            self._idle_flushed = True
            self.processing = True
            self.process_batch([], finish=False, idle=True)

    def _schedule_flush(self) -> None:
        if self.processing:
            return  # flushed again when the batch in flight is done
        if self._pending_count >= FLUSH_LINES or self.tail_done:
            if self._flush_timer is not None:
                self._flush_timer.stop()
                self._flush_timer = None
            self.call_later(self.flush)
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self.flush)

    def flush(self) -> None:
        """Hand waiting lines to the parser worker (one batch in flight at a time, so order is kept)."""
        self._flush_timer = None
        if self.processing:
            return  # the batch in flight flushes again when it is done
        if not self._pending:
            if self.tail_done and self.session.replay and not self.finished:
                self.processing = True
                self.process_batch([], finish=True)  # a recorded log ended: emit a pending traceback
            self._refresh_header()
            return
        batch: list[str] = []
        first_view_no: int | None = None
        if self._pending[0][2]:  # the launch's server_args line from before the backfill: analysed, not shown
            first_line, lines, _ = self._pending.pop(0)
            self._pending_count -= len(lines)
            self.processing = True
            self.process_batch(list(lines), finish=False, first_view_no=first_line + self.cockpit.offset, show=False)
            return
        while self._pending and len(batch) < MAX_LINES_PER_FLUSH and not self._pending[0][2]:
            first_line, lines, _ = self._pending.pop(0)
            if first_view_no is None:
                first_view_no = first_line + self.cockpit.offset
            batch.extend(lines)
        self._pending_count -= len(batch)
        self.processing = True
        self.process_batch(batch, finish=False, first_view_no=first_view_no)

    @work(group="parse")
    async def process_batch(self, batch: list[str], *, finish: bool, first_view_no: int | None = None,
                            idle: bool = False, show: bool = True) -> None:
        """Parse + metrics + rules in a worker thread, one batch at a time so order is kept.

        Measured (perf/perf_ui.py): slicing the parse cooperatively on the event loop costs every
        hop of a key's handling one slice and fell behind a 5k lines/s log; a thread keeps up and
        keys wait at most a GIL switch interval per hop.
        """
        try:
            # Sanitise + parse in one thread hop; the lines, their colours and the panels then reach the
            # screen together on the event loop: one repaint per batch, not one for the text and one for
            # the kinds.
            prepared, update = await self.analysed(batch, first_view_no)
            if batch and show:
                with contextlib.suppress(NoMatches):  # the screen was taken apart meanwhile (exit)
                    self.query_one(LogView).append_prepared(prepared, first_line=first_view_no)
            if update is not None:
                self._apply(update)
            if idle:
                self._apply(await asyncio.to_thread(self.cockpit.flush), panels_now=True)
            if finish:
                self._apply(self.cockpit.finish(), panels_now=True)
                self.finished = True
        except Exception as exc:  # noqa: BLE001 - a parser bug must not take the cockpit down; lines stay shown
            self.finished = self.finished or finish
            self.notify(f"could not analyse {len(batch)} lines: {type(exc).__name__}: {exc}", severity="error",
                        timeout=30, markup=False)
        finally:
            self.processing = False
        if self._pending or (self.tail_done and self.session.replay and not self.finished):
            self._schedule_flush()

    async def analysed(self, batch: list[str], first_view_no: int | None) -> tuple[tuple[list[str], int], CockpitUpdate | None]:
        """`_analyse` in a worker thread (a hidden tab of several overrides where its batch is parsed)."""
        return await asyncio.to_thread(self._analyse, batch, first_view_no)

    def _analyse(self, batch: list[str], first_view_no: int | None = None,
                 ) -> tuple[tuple[list[str], int], CockpitUpdate | None]:
        """Worker thread: analyse_batch at the batch's arrival (the phase timeline's durations)."""
        return analyse_batch(self.cockpit, batch, self.clock(), first_view_no)

    async def wait_processed(self) -> None:
        """Until the batch in flight is on screen, panels included."""
        import asyncio

        while self.processing:
            await asyncio.sleep(0.01)
        self._push_panels()

    def _apply(self, update: CockpitUpdate, *, panels_now: bool = False) -> None:
        """Log colours at once; the panels at most every PANEL_INTERVAL, with a batch's lines when one comes
        (a busy log updates them with its flushes, in the same repaint), else by a timer."""
        self.last_update = update
        self.query_one(LogView).mark_kinds(update.kinds)
        for d in update.new_diagnoses:
            if d.severity == "error" and d.count == 1:
                self.notify(f"{d.rule}: {d.title}", title="new diagnosis", severity="error", timeout=6,
                            markup=False)
        if panels_now or time.monotonic() - self._panels_at >= PANEL_INTERVAL:
            self._push_panels()
        elif self._panel_timer is None and not (self._pending or self._flush_timer is not None):
            # Only when no batch is on its way: a busy log's next batch pushes them in its own frame (a timer
            # of their own fell between batches: a second repaint of the screen each time).
            self._panel_timer = self.set_timer(PANEL_INTERVAL, self._push_panels)

    def _push_panels(self) -> None:
        """Show the latest update in the panels; a widget whose value did not change is not repainted."""
        if self._panel_timer is not None:
            self._panel_timer.stop()
            self._panel_timer = None
        update = self.last_update
        if update is None or update is self._panels_of:
            return
        self._panels_of, self._panels_at = update, time.monotonic()
        spec = SpecData(update.snapshot, update.config, update.history, update.dp_ranks, update.baseline,
                        self.cockpit.baseline_source, *self.stale_figures())  # old figures say so (stalewatch.py)
        panel = self.query_one(SpecPanel)
        if spec != panel.data:
            panel.data = spec
        config = self.query_one(ConfigPanel)
        if update.config != config.view:
            config.view = update.config
        self.query_one(DiagnosesPanel).set_diagnoses(update.diagnoses)
        self._refresh_header()
        self._show_timeline()

    async def switch_log(self, path: str, *, launch: Any = None, marker: str | None = None) -> None:
        """Follow a new log (after a relaunch): plots keep the old launch behind a boundary."""
        if path in (self.log_path, getattr(self, "switching_to", None)):
            return  # already there (or on the way): a successor found and this cockpit's own relaunch both land here
        log = self.query_one(LogView)
        self.switching_to = path
        self.workers.cancel_group(self, "tail")
        while self._pending or self.processing:  # the old log's last lines belong to the old pipeline
            self.flush()
            await self.wait_processed()
        self.mark_line(marker or f"──── relaunched: now following {path} ────")
        self.cockpit.new_stream(launch=launch, view_last_line=log.last_line_no, now=self.clock())
        log.begin_file()  # the gutter counts the new file's own lines from 1
        self.log_path = path
        self._update_log_title()
        self.follow(path, from_start=True)  # a new launch: every line of it, start-up included

    def mark_line(self, text: str) -> None:
        """A marker line of the cockpit's own in the log pane (relaunch, successor), coloured as a milestone."""
        log = self.query_one(LogView)
        log.append_lines([text])
        log.mark_own(log.last_line_no)  # no file line number in the gutter
        log.mark_kinds([(log.last_line_no, log.last_line_no, "milestone")])

    def _show_timeline(self) -> None:
        tl = self.cockpit.timeline
        self.query_one(PhaseTimelineBar).show(tl.steps, self.clock(), tl.last)

    # ---- header / gpus -----------------------------------------------------------------------------

    def _refresh_header(self) -> None:
        u = self.last_update
        snap = u.snapshot if u else None
        # Rounded to what the header shows: an unchanged value does not repaint it (idle CPU).
        age = None if self._last_line_at is None else age_step(max(0.0, self.clock() - self._last_line_at))
        try:
            header, log = self.query_one(HeaderBar), self.query_one(LogView)
        except NoMatches:  # a worker's verdict (liveness, a probe) landed while the screen is taken apart at exit
            return
        header.info = HeaderInfo(
            host=self.session.label,
            pid=self.session.pid,
            version=(u.version if u else None) or self.session.sglang_version,
            phase=str(snap.phase.value if snap is not None and hasattr(snap.phase, "value") else "unknown"),
            connection=self.connection,
            last_line_age=None if self.session.replay else age,
            launched=u.launched if u else None,
            log_path=self.log_path,
            read_only=self.session.read_only,
            paused=not log.following,
            health=self.health.state if self.health else None,
            health_reason=self.health.reason if self.health else "",
        )

    @work(exclusive=True, group="gpus")
    async def poll_gpus(self) -> None:
        import asyncio

        from spectui.sources.probeshare import shared_run  # tabs of one host: one nvidia-smi for all (#29)
        strip = self.query_one(GpuStrip)
        while True:
            try:
                result = await shared_run(self.session.host, NVIDIA_SMI_ARGV, timeout=10, max_age=0.9 * GPU_POLL_INTERVAL)
            except Exception as exc:  # noqa: BLE001 - a GPU probe must never take the dashboard down
                result, why = None, f"could not run nvidia-smi ({type(exc).__name__})"
            if result is None or result.exit_status != 0:
                strip.remove_class("-visible")  # no nvidia-smi (or no GPU): said once, the strip stays hidden
                why = why if result is None else f"nvidia-smi exited {result.exit_status}"
                self.gpu_note = f"no GPU strip: {why} on {self.session.label} (no GPU data)"
                self.notify(self.gpu_note, timeout=6)
                return
            self.gpu_note = "ok"
            gpus = parse_nvidia_smi(result.stdout)
            strip.set_gpus(gpus)
            strip.set_class(bool(gpus), "-visible")
            await asyncio.sleep(GPU_POLL_INTERVAL)

    @on(LogView.StateChanged)
    def _log_state_changed(self) -> None:
        self._update_log_title()

    @on(Input.Submitted, "#prompt")
    def _prompt_entered(self, event: Input.Submitted) -> None:
        self._prompt_submitted(event)

    # ---- diagnoses -------------------------------------------------------------------------------

    @on(DiagnosesPanel.Selected)
    def _explain(self, event: DiagnosesPanel.Selected) -> None:
        from spectui.ui.screens.explain import ExplainScreen

        self.app.push_screen(ExplainScreen(event.diagnosis, read_only=self.session.read_only))

    @on(RelaunchFinished)
    async def _relaunched(self, event: RelaunchFinished) -> None:
        attempt = event.result.new if event.healthy else getattr(event.result, "rollback", None)
        if getattr(attempt, "pid", None) is not None:
            self.session.current_pid = attempt.pid
            self.restart_server_watch()  # the header follows the new server at once (not "GONE" for ever)
        if event.launch is not None:
            self.session.launch = event.launch
        if event.log_path and event.log_path not in (self.log_path, getattr(self, "switching_to", None)):
            # (not when already followed as the successor)
            await self.switch_log(event.log_path, launch=event.launch)

    @on(DiagnosesPanel.FixRequested)
    def _fix(self, event: DiagnosesPanel.FixRequested) -> None:
        self.app.action_relaunch(event.diagnosis)  # type: ignore[attr-defined]
