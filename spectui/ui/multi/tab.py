"""One tab: a server's Session, its Cockpit and its dashboard (the single-server dashboard plus the strip)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding

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


class TabDashboard(DashboardScreen):
    """The single-server dashboard with the summary strip on top (hidden while there is one tab)."""

    BINDINGS = TAB_BINDINGS
    DEFAULT_CSS = """
    TabDashboard SummaryStrip { display: none; }
    TabDashboard.-tabs SummaryStrip { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield SummaryStrip(id="summary")
        yield from super().compose()

    def show_summary(self, entries: tuple[TabSummary, ...], active: int) -> None:
        self.set_class(len(entries) > 1, "-tabs")
        strip = self.query_one(SummaryStrip)
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
