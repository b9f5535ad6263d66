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
from spectui.ui.screens.dashboard import DashboardScreen
from spectui.ui.session import Session
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

    def compose(self) -> ComposeResult:
        yield SummaryStrip(id="summary")
        for widget in super().compose():
            yield TabFooter() if type(widget) is Footer else widget

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
        self._push_panels()
        self._refresh_header()

    def show_summary(self, entries: tuple[TabSummary, ...], active: int) -> None:
        self.set_class(len(entries) > 1, "-tabs")
        strip = next(iter(self.query(SummaryStrip)), None)
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
