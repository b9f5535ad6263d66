"""The Textual app: wiring only — screens, global keys, command palette entries. Logic lives elsewhere."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from spectui.ui.controller import Cockpit
from spectui.ui.screens.bench import cockpit_baseline
from spectui.ui.screens.dashboard import DashboardScreen
from spectui.ui.session import Session


class SpectuiApp(App[int]):
    CSS_PATH = "spectui.tcss"
    TITLE = "spectui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark,f1", "help", "Help"),
        Binding("colon,ctrl+p", "command_palette", "Commands", show=False),
        Binding("r", "relaunch", "Relaunch"),
        Binding("r", "relaunch_preview", "Preview"),  # read-only: the screen's diff and verdict, no relaunch
        Binding("h", "history", "History"),
        Binding("b", "bench", "Bench"),
        Binding("w", "sweep", "Sweep"),
        Binding("w", "sweep_plan", "Plan"),  # read-only: the sweep's plan, nothing launched
        Binding("i", "draft", "Draft"),
        Binding("x", "record", "Record"),
        # A key whose action this session forbids is out of the footer; pressed, it says why (check_action).
        *(Binding(key, f"off('{action}')", show=False)
          for key, action in (("r", "relaunch"), ("b", "bench"), ("w", "sweep"), ("x", "record"))),
    ]

    def __init__(
        self,
        session: Session,
        *,
        clock: Callable[[], float] = time.monotonic,
        rules: Any = None,
        max_log_lines: int = 50_000,
        baseline_tps: float | None = None,
        baseline_source: str | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.clock = clock
        self.cockpit = Cockpit(launch=session.launch, version=session.sglang_version, rules=rules,
                               catalogue=getattr(session, "flag_catalogue", None),
                               **cockpit_baseline(session, baseline_tps, baseline_source))
        self.dashboard = DashboardScreen(session, self.cockpit, clock=clock, max_log_lines=max_log_lines)

    def get_default_screen(self) -> Screen:
        return self.dashboard

    # ---- which keys work here: the footer and help show only those -----------------------------

    def off_actions(self) -> dict[str, str]:
        """Actions this session forbids (hidden from the footer, left out of help), with why."""
        from spectui.ui.screens.help import off_actions

        try:
            session = self.session
        except IndexError:  # a tabbed cockpit with no tab open (fleet only)
            return {}
        return off_actions(session)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        off = self.off_actions()
        if action in ("relaunch_preview", "sweep_plan"):  # what read-only leaves of relaunch and sweep
            return action not in off and action.split("_")[0] in off
        return action not in off

    # ---- actions (also reachable from the command palette) ------------------------------------

    def action_help(self) -> None:
        from spectui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.off_actions()))

    def action_off(self, action: str) -> None:
        reason = self.off_actions().get(action)
        if reason:
            self.notify(f"{action} is off in this session: {reason}", severity="warning", markup=False)

    def action_relaunch_preview(self) -> None:
        self.action_relaunch()

    def action_sweep_plan(self) -> None:
        self.action_sweep()

    def action_history(self) -> None:
        from spectui.ui.screens.history import HistoryScreen

        self.push_screen(HistoryScreen(self.session, self.cockpit))

    def action_relaunch(self, diagnosis: Any = None) -> None:
        from spectui.ui.screens.relaunch import RelaunchScreen

        if self.session.read_only:
            from spectui.ui.screens.help import read_only_reason

            self.notify(f"read-only session: relaunch is disabled ({read_only_reason(self.session)})",
                        severity="warning", markup=False)
        self.push_screen(RelaunchScreen(self.session, self.cockpit, diagnosis=diagnosis))

    def action_draft(self) -> None:
        from spectui.ui.screens.draft import DraftScreen

        self.push_screen(DraftScreen(self.session, self.cockpit))  # reads in a worker: the log keeps flowing

    def action_bench(self) -> None:
        from spectui.ui.screens.bench import BenchScreen

        self.push_screen(BenchScreen(self.session, self.cockpit))  # a worker: the log keeps flowing

    def action_sweep(self) -> None:
        from spectui.ui.screens.sweep import SweepScreen

        try:
            session, cockpit = self.session, self.cockpit
        except IndexError:  # a tabbed cockpit with no tab open (fleet only)
            self.notify("no server open: pick one in the fleet (enter)", timeout=4)
            return
        self.push_screen(SweepScreen(session, cockpit))  # plan first; the run is a worker: the log keeps flowing

    def action_record(self) -> None:
        from spectui.ui.recording import start_recording

        start_recording(self)  # a worker: the log keeps flowing; a notification says where it saved

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Screenshots go under the XDG state folder (not ~/Downloads, which a server may not have)."""
        if path is None:
            from spectui.ops.history import default_history_path

            folder = default_history_path().parent / "screenshots"
            folder.mkdir(parents=True, exist_ok=True)
            path = str(folder)
        if self.is_web:  # in a browser the file is served to the viewer
            return super().deliver_screenshot(filename, path, time_format)
        saved = self.save_screenshot(filename, path, time_format)
        self.notify(f"screenshot saved: {saved}", timeout=8)
        return saved

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        dash = self.dashboard
        commands = [
            ("Help", "Keys and what the numbers mean (? / F1)", self.action_help),
            ("Relaunch", "Edit flags, see diff and verdict, relaunch (r)", self.action_relaunch),
            ("History", "Previous launches of this server and what they reached (h)", self.action_history),
            ("Record bundle", "Save an incident bundle of this server, secrets masked (x)", self.action_record),
            ("Bench", "Load the server and measure tok/s and accept len, vs no speculation (b)", self.action_bench),
            ("Sweep", "Plan and run a grid of speculative depths, relaunch + bench each, vs baseline (w)",
             self.action_sweep),
            ("Draft checkpoint", "Inspect the server's draft: config.json + safetensors headers (i)", self.action_draft),
            ("Follow / pause log", "Toggle following the log (space)", dash.action_toggle_follow),
            ("Search log", "Search the log (/), then n / N", lambda: dash.action_prompt("search")),
            ("Filter log", "Show only matching lines; !regex inverts (\\)", lambda: dash.action_prompt("filter")),
            ("Clear filter", "Show every line again", lambda: dash.query_one("LogView").set_filter("")),
            ("Next error", "Jump to the next error in the log (e)", lambda: dash.action_error(False)),
            ("Previous error", "Jump to the previous error in the log (E)", lambda: dash.action_error(True)),
            ("Copy log lines", "Copy the cursor line, or the lines on screen (y)", dash.action_copy),
            ("Log top", "Jump to the first line held (g)", dash.action_top),
            ("Log bottom", "Jump to the end and follow (G)", dash.action_bottom),
            ("Focus diagnoses", "Move focus to the diagnoses list (d)", lambda: dash.action_focus("diagnoses")),
        ]
        for title, help_text, callback in commands:
            yield SystemCommand(title, help_text, callback)
