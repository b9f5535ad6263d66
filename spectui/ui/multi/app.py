"""The cockpit over several servers: one TabDashboard per tab, a summary strip, keys to switch, a fleet screen.

Every tab keeps its own tail, probes, pipeline and rules (its own Session + Cockpit + dashboard) running
while another is shown; only the shown one is painted. The app's `session`, `cockpit` and `dashboard` are
the shown tab's, so every action of the single-server app (help, relaunch, history, palette) works on it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen

from spectui.ui.app import SpectuiApp
from spectui.ui.controller import Cockpit
from spectui.ui.multi.background import HIDDEN_FLUSH_INTERVAL, BackgroundParse
from spectui.ui.multi.tab import Tab, TabDashboard
from spectui.ui.session import Session

# The shown tab's actions: over the fleet screen they would act on a tab the operator cannot see (the
# highlighted fleet row is another server), so there they are off; `enter` opens the row's server first.
TAB_ACTIONS = frozenset({"relaunch", "relaunch_preview", "history", "record", "draft", "bench", "sweep",
                         "sweep_plan"})
SUMMARY_INTERVAL = 1.0  # seconds between summary-strip refreshes (values unchanged: no repaint)
TICK_INTERVAL = 1.0  # the one app timer: every tab's 1 s tick, the hidden tabs' parse round, the strip


@dataclass
class TabSpec:
    """What `connect` hands the app for one tab (a group: the primary's Session with a merged tail)."""

    label: str
    session: Session
    members: tuple[Session, ...] = ()
    refusal: str | None = None
    baseline_tps: float | None = None


class TabbedApp(SpectuiApp):
    CSS_PATH = "../spectui.tcss"  # the single-server cockpit's stylesheet (relative to this module)

    def __init__(
        self,
        specs: Sequence[TabSpec],
        *,
        clock: Callable[[], float] = time.monotonic,
        rules: Any = None,
        max_log_lines: int = 50_000,
        fleet: Any = None,  # ui.screens.fleet.FleetSource, or None (the `0` key then says how to get one)
        # (ssh target, the instance's port) -> a new tab (fleet enter)
        opener: Callable[[str, int | None], Awaitable[TabSpec]] | None = None,
    ) -> None:
        App.__init__(self)  # not SpectuiApp's: it builds one dashboard; here every tab builds its own
        self.clock = clock
        self._rules = rules
        self.max_log_lines = max_log_lines
        self.fleet = fleet
        self.opener = opener
        self.tabs: list[Tab] = []
        self.active = 0
        self._tab_ids = 0
        self.background = BackgroundParse()
        for spec in specs:
            self._new_tab(spec)

    # the shown tab's, for every inherited action
    @property
    def session(self) -> Session:  # type: ignore[override]
        return self.tabs[self.active].session

    @property
    def cockpit(self) -> Cockpit:  # type: ignore[override]
        return self.tabs[self.active].cockpit

    @property
    def dashboard(self) -> TabDashboard:  # type: ignore[override]
        return self.tabs[self.active].dashboard

    def _new_tab(self, spec: TabSpec) -> Tab:
        s = spec.session
        cockpit = Cockpit(launch=s.launch, version=s.sglang_version, rules=self._rules,
                          catalogue=getattr(s, "flag_catalogue", None))
        if self._rules is None:
            self._rules = cockpit._rules  # rule files read once for every tab
        dash = TabDashboard(s, cockpit, clock=self.clock, max_log_lines=self.max_log_lines)
        dash.background = self.background
        tab = Tab(spec.label, s, cockpit, dash, spec.members, spec.refusal, spec.baseline_tps)
        self._tab_ids += 1
        self.install_screen(dash, name=f"tab-{self._tab_ids}")
        self.tabs.append(tab)
        return tab

    def get_default_screen(self) -> Screen:
        if not self.tabs:  # `connect --prometheus URL` alone: the fleet is where one starts
            from spectui.ui.screens.fleet import FleetScreen

            return FleetScreen(self.fleet, self.open_instance, closable=False)
        return Screen()  # under the tabs: a pushed screen can be switched (the default one cannot)

    async def on_mount(self) -> None:
        # Every tab is shown once, last to first, so each one is composed and starts following its log;
        # an installed screen switched away from stays mounted (tails, timers) but is not painted.
        if self.tabs:
            await self.push_screen(self.tabs[-1].dashboard)
            for tab in reversed(self.tabs[:-1]):
                await self.switch_screen(tab.dashboard)
        self.set_interval(min(TICK_INTERVAL, SUMMARY_INTERVAL, HIDDEN_FLUSH_INTERVAL), self._second)
        self.call_after_refresh(self.refresh_summary)

    def _second(self) -> None:
        """The one timer of every tab: each dashboard's tick, the hidden tabs' parse round, the strip."""
        import contextlib

        from textual.css.query import NoMatches

        for tab in self.tabs:
            if tab.dashboard.is_mounted:
                with contextlib.suppress(NoMatches):
                    tab.dashboard._tick()
        self.background.round(t.dashboard for t in self.tabs if t.dashboard.is_mounted)
        self.refresh_summary()

    def refresh_summary(self) -> None:
        """The shown tab's strip gets every tab's values (hidden tabs' strips are set when shown)."""
        if not self.tabs:
            return
        entries = tuple(t.summary() for t in self.tabs)
        if self.tabs[self.active].dashboard.is_mounted:
            self.tabs[self.active].dashboard.show_summary(entries, self.active)

    # ---- switching -------------------------------------------------------------------------------

    def action_tab(self, number: int) -> None:
        self.show_tab(number - 1)

    def action_tab_step(self, step: int) -> None:
        self.show_tab((self.active + step) % len(self.tabs))

    def show_tab(self, index: int) -> None:
        if not 0 <= index < len(self.tabs):
            self.notify(f"no tab {index + 1} ({len(self.tabs)} open)", timeout=2)
            return
        if index == self.active and self.screen is self.tabs[index].dashboard:
            return
        from spectui.ui.screens.fleet import FleetScreen

        self.active = index
        if isinstance(self.screen, FleetScreen) and len(self.screen_stack) > 1 and self.screen.closable:
            self.pop_screen()  # the fleet screen over a tab
        if isinstance(self.screen, TabDashboard):
            self.switch_screen(self.tabs[index].dashboard)
        else:
            self.push_screen(self.tabs[index].dashboard)  # the first tab opened from a fleet-only start
        self.call_after_refresh(self.refresh_summary)

    async def add_tab(self, spec: TabSpec) -> Tab:  # shown at once, so it is composed and starts
        tab = self._new_tab(spec)
        self.show_tab(len(self.tabs) - 1)
        return tab

    # ---- actions that differ with tabs -------------------------------------------------------------

    def _over_fleet(self, screen: Screen | None = None) -> bool:
        from spectui.ui.screens.fleet import FleetScreen

        return isinstance(screen or self.screen, FleetScreen)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in TAB_ACTIONS and self._over_fleet():
            return False  # hidden from the footer and not run: see TAB_ACTIONS
        return super().check_action(action, parameters)

    def action_history(self) -> None:
        if self.tabs:
            super().action_history()

    def action_relaunch(self, diagnosis: Any = None) -> None:
        if not self.tabs:
            self.notify("no server open: pick one in the fleet (enter)", timeout=4)
            return
        refusal = self.tabs[self.active].refusal
        if refusal:
            self.notify(refusal, title="relaunch", severity="error", timeout=20, markup=False)
            return
        super().action_relaunch(diagnosis)

    def action_fleet(self) -> None:
        if self.fleet is None:
            self.notify("no fleet: start with --prometheus URL (see spectui connect --help)", timeout=6)
            return
        from spectui.ui.screens.fleet import FleetScreen

        if not isinstance(self.screen, FleetScreen):
            self.push_screen(FleetScreen(self.fleet, self.open_instance))

    async def open_instance(self, target: str, instance: str) -> None:
        """Fleet `enter`: connect to the instance over SSH in a worker, then open it as a new tab. A tab on
        the same target and the instance's port (or of unknown port) is shown instead: a host may run
        several servers, one per port."""
        from spectui.ui.screens.fleet import instance_port

        port = instance_port(instance)
        for i, tab in enumerate(self.tabs):
            same = tab.label == target or tab.label == f"{target} ({instance})"
            if same and (port is None or tab.session.server_port in (None, port)):
                self.show_tab(i)
                return
        if self.opener is None:
            self.notify("this cockpit cannot open new servers", severity="warning")
            return
        self.notify(f"connecting to {target} for {instance}…", timeout=4, markup=False)
        self.run_worker(self._open(target, instance), group="open", exclusive=False)

    async def _open(self, target: str, instance: str) -> None:
        from spectui.ui.screens.fleet import instance_port

        assert self.opener is not None
        try:
            spec = await self.opener(target, instance_port(instance))
            if any(t.label == spec.label for t in self.tabs):  # another server of the same host: say which
                spec.label = f"{spec.label} ({instance})"
        except Exception as exc:  # noqa: BLE001 - one line, the cockpit stays up
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.notify(f"could not open {instance} ({target}): {first}", severity="error", timeout=15,
                        markup=False)
            return
        await self.add_tab(spec)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        if self.tabs and not self._over_fleet(screen):
            yield from super().get_system_commands(screen)
        else:
            yield from App.get_system_commands(self, screen)
        yield SystemCommand("Next tab", "Show the next server (] or ctrl+pagedown)", lambda: self.action_tab_step(1))
        yield SystemCommand("Previous tab", "Show the previous server ([ or ctrl+pageup)",
                            lambda: self.action_tab_step(-1))
        for i, tab in enumerate(self.tabs[:9]):
            yield SystemCommand(f"Tab {i + 1}: {tab.label}", f"Show {tab.label} ({i + 1})",
                                lambda i=i: self.show_tab(i))
        yield SystemCommand("Fleet", "Every SGLang server Prometheus scrapes, worst first; enter opens one (0)",
                            self.action_fleet)
