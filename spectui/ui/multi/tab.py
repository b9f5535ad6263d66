"""One tab: a server's Session, its Cockpit and its dashboard (the single-server dashboard plus the strip)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer

from spectui.ui.controller import Cockpit
from spectui.ui.multi.background import BackgroundParse, TabLogView
from spectui.ui.screens.dashboard import MAX_LINES_PER_FLUSH, DashboardScreen
from spectui.ui.session import Session
from spectui.ui.widgets.log_view import LogView
from spectui.ui.widgets.summary_strip import SummaryStrip, TabSummary, summarize

# Tab keys, on the dashboard only (not the app): under a dialog they stay the dialog's. `1`-`9`, `[`/`]`
# and ctrl+pageup/pagedown (browser and tmux habit) are free in the dashboard, log keys and app bindings.
TAB_BINDINGS = [
    *(Binding(str(n), f"app.tab({n})", f"Tab {n}", show=False) for n in range(1, 10)),
    Binding("left_square_bracket", "app.tab_step(-1)", "Prev tab", show=False),
    Binding("right_square_bracket", "app.tab_step(1)", "Next tab", show=False),
    # priority: the log pane (a scroll view) would take them for horizontal paging
    Binding("ctrl+pageup", "app.tab_step(-1)", "Prev tab", show=False, priority=True),
    Binding("ctrl+pagedown", "app.tab_step(1)", "Next tab", show=False, priority=True),
    Binding("0", "app.fleet", "Fleet", show=False),
]


class TabFooter(Footer):
    """A Footer that rebuilds its keys only while its tab is shown (ten hidden footers rebuilding on every
    bindings change cost most of the event loop's time in perf/perf_tabs.py)."""

    def bindings_changed(self, screen: Screen) -> None:
        stack = self.app.screen_stack if self.is_attached else []
        if stack and self.screen not in stack:
            return  # hidden: a shown screen's bindings are published again when it resumes
        super().bindings_changed(screen)


class TabDashboard(DashboardScreen):
    """The single-server dashboard with the summary strip on top (hidden while there is one tab)."""

    BINDINGS = TAB_BINDINGS
    DEFAULT_CSS = """
    TabDashboard SummaryStrip { display: none; }
    TabDashboard.-tabs SummaryStrip { display: block; }
    """

    background: BackgroundParse | None = None  # set by the app: hidden tabs parse through it, in turn
    _strip: SummaryStrip | None = None

    def compose(self) -> ComposeResult:
        yield SummaryStrip(id="summary")
        for widget in super().compose():
            if type(widget) is Footer:
                yield TabFooter(show_command_palette=False, compact=True)
            elif type(widget) is LogView:
                log = TabLogView(id=widget.id, max_lines=widget.max_lines)
                log.hidden = self._hidden
                yield log
            else:
                yield widget

    # ---- a hidden tab: no per-tab timers, its lines parsed in the app's round, held off its pane ----------

    @property  # type: ignore[override]
    def processing(self) -> bool:  # the dashboard sets it; its fall to False ends a background batch
        return self.__dict__.get("_processing", False)

    @processing.setter
    def processing(self, value: bool) -> None:
        was = self.__dict__.get("_processing", False)
        self.__dict__["_processing"] = value
        if was and not value and self.background is not None:
            self.background.done(self)

    def set_interval(self, interval: float, callback: Any = None, **kwargs: Any) -> Any:
        if self.background is not None and callback == self._tick:
            return None  # the app's one 1 s tick calls every tab's _tick (ten timers cost idle CPU)
        return super().set_interval(interval, callback, **kwargs)

    def _schedule_flush(self) -> None:
        if self.background is None or self.tail_done or not self._hidden():
            super()._schedule_flush()
        elif not self.processing:
            self.background.want(self, urgent=self._pending_count >= MAX_LINES_PER_FLUSH)

    async def analysed(self, batch: list[str], first_view_no: int | None) -> Any:
        """A hidden tab's lines are parsed on the event loop in short slices when it is idle (slicer.py);
        the shown tab's, an idle flush and a replay's end as in the single-server dashboard (a thread)."""
        if batch and self.background is not None and self._hidden():
            return await self.background.analyse(self, batch, first_view_no)
        return await super().analysed(batch, first_view_no)

    def _show_timeline(self) -> None:
        show = getattr(super(), "_show_timeline", None)
        if show is not None and not self._hidden():
            with contextlib.suppress(NoMatches):
                show()

    # A hidden tab keeps its log pane and its last update current but does not repaint its panels and
    # header (a few ms each, ten tabs four times a second): they catch up when it is shown again.
    # At exit the app takes the tabs apart one by one while hidden tabs still have a parse result or a
    # timer in flight: a panel already removed is not an error then.
    def _hidden(self) -> bool:
        stack = self.app.screen_stack if self.is_attached else []
        return not stack or self not in stack  # under a dialog it is still the tab shown

    def _push_panels(self) -> None:
        if self._hidden():
            if self._panel_timer is not None:
                self._panel_timer.stop()
                self._panel_timer = None
            return
        with contextlib.suppress(NoMatches):
            super()._push_panels()

    def _refresh_header(self) -> None:
        if self._hidden():
            return
        with contextlib.suppress(NoMatches):
            super()._refresh_header()

    def _apply(self, update: Any, *, panels_now: bool = False) -> None:
        with contextlib.suppress(NoMatches):
            super()._apply(update, panels_now=panels_now)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Shown: the held lines go on the pane and the waiting ones to the parser now, not at the next round.
        if self.background is not None:
            self.background.forget(self)
        with contextlib.suppress(NoMatches):
            self.query_one(TabLogView).release()
        if self._pending and not self.processing:
            self.flush()
        self._push_panels()
        self._refresh_header()
        self._show_timeline()

    def on_unmount(self) -> None:
        if self.background is not None:
            self.background.unfreeze()

    def show_summary(self, entries: tuple[TabSummary, ...], active: int) -> None:
        self.set_class(len(entries) > 1, "-tabs")
        strip = self._strip
        if strip is None or not strip.is_attached:  # looked up once (a DOM query is ~1 ms, every second)
            strip = self._strip = next(iter(self.query(SummaryStrip)), None)
        if strip is None:
            return  # being taken apart at exit
        if strip.entries != entries:
            strip.entries = entries
        if strip.active != active:
            strip.active = active


@dataclass
class Tab:
    label: str
    session: Session
    cockpit: Cockpit
    dashboard: TabDashboard
    members: tuple[Session, ...] = ()  # a group's member sessions (their hosts are closed at exit)
    refusal: str | None = None  # why relaunch is refused here (a multi-node group), else None
    baseline_tps: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> TabSummary:
        return summarize(self.label, self.dashboard.last_update, baseline_tps=self.baseline_tps,
                         group=bool(self.members))
