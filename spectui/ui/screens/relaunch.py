"""Relaunch screen (`r`): speculative flags as fields, the rest as a raw command line, the environment as
NAME=VALUE words (secret values masked, kept unless edited); live diff and verdict.

Every keystroke rebuilds the edited LaunchCommand, diffs it against the running one and asks
core.resolve what SGLang would do with it (warnings, effective values, errors) — all pure and fast.
Confirm (press Relaunch twice) hands the command to ops.relaunch.run in a worker and shows its progress.

One transaction: while it runs, confirm is disabled and the screen cannot be closed (closing would cancel
the worker half-way); a failure is shown here — the reason, the diagnosis that ended it (rule, title,
evidence line), every rollback step, what runs now — and disarms confirm: a fresh confirmation plans
again from the server that runs now. Secrets (`--api-key`, HF_TOKEN …) are masked as the CLI shows them.

A healthy relaunch records what it reached: once the cockpit follows the new log and its own pipeline has
read the new launch's first decode window (REACHED_SAMPLES decode lines), the launch history's record gets
the accept length and gen tok/s of that window (HistoryStore.update), so `h` shows them instead of "–" —
unless the relaunch's own health check already recorded them (one figure per launch, never replaced).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from spectui.ui.relaunch_model import SPEC_FIELDS, Draft, build_command, evaluate, split_command
from spectui.ui.widgets.prediction import Prediction

REACHED_SAMPLES = 10  # decode lines of the new launch: its first window, recorded in the history
REACHED_CHECK_S = 1.0
REACHED_TIMEOUT_S = 3600.0  # an idle server may take long to decode anything; give up after an hour


def record_reached(app: Any, dash: Any, log: str, history_id: str, *, store: Any = None,
                   samples: int = REACHED_SAMPLES, timeout_s: float = REACHED_TIMEOUT_S) -> Any:
    """Watch the cockpit's own pipeline for the new launch (`dash` following `log`): once its first decode
    window is complete, update the history record `history_id` with the accept length and gen tok/s it
    reached. Stops then, after `timeout_s`, or when the dashboard follows another log. Returns the timer."""
    import time

    from spectui.ops.history import HistoryStore

    history = store if store is not None else HistoryStore()
    started = time.monotonic()
    seen = False  # the dashboard has followed `log`

    def tick() -> None:
        nonlocal seen
        following = getattr(dash, "log_path", None) == log
        seen = seen or following
        if (seen and not following) or time.monotonic() - started > timeout_s:
            timer.stop()
            return
        snap = getattr(getattr(dash, "cockpit", None), "snapshot", None)
        if not following or snap is None or snap.samples < samples or snap.accept_len.mean is None:
            return
        timer.stop()
        tps = snap.gen_tokens_per_s.mean
        try:
            # One figure per launch: the relaunch's own health watcher may have recorded what it reached
            # (ops.relaunch.run, as the CLI does); that stays. The cockpit fills it in only when none was.
            if any(r.id == history_id and r.accept_len is not None for r in history.read()):
                return
            history.update(history_id, accept_len=round(snap.accept_len.mean, 3),
                           gen_tokens_per_s=None if tps is None else round(tps, 1))
        except OSError as exc:  # history is a convenience: say so, never fail the cockpit
            app.notify(f"could not record the relaunch's accept length in the history: {exc}", severity="warning")

    timer = app.set_interval(REACHED_CHECK_S, tick)
    return timer


class RelaunchScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Cancel"), Binding("ctrl+s", "confirm", "Relaunch")]

    # Fields first, then the live diff/verdict/effective/command (scrolling, 1fr), and below it the
    # progress and the buttons, always visible at the bottom (a dock would cover the scroll's end).
    # Fields have a background of their own (brighter when focused) so they read as editable.
    DEFAULT_CSS = """
    RelaunchScreen .row { height: 1; }
    RelaunchScreen .row Label { width: 14; padding: 0 1 0 0; }
    RelaunchScreen .row Input { width: 1fr; border: none; height: 1; padding: 0 1; background: $boost; }
    RelaunchScreen .row Input:focus { background: $primary 35%; }
    RelaunchScreen .row Select { width: 1fr; height: 1; }
    RelaunchScreen .row SelectCurrent { border: none; height: 1; padding: 0 1; background: $boost; }
    RelaunchScreen .row Select:focus > SelectCurrent { background: $primary 35%; }
    RelaunchScreen #verdict { height: auto; margin-top: 1; }
    RelaunchScreen #bottom { height: auto; }
    RelaunchScreen #progress-box { height: auto; max-height: 40vh; }
    RelaunchScreen #progress { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    RelaunchScreen #progress.refused { text-wrap: wrap; }
    RelaunchScreen #buttons { height: 3; }
    RelaunchScreen #go { width: auto; }
    RelaunchScreen #keys { padding: 1 2; color: $text-muted; }
    """

    def __init__(self, session: Any, cockpit: Any, *, diagnosis: Any = None) -> None:
        super().__init__()
        self.session = session
        self.cockpit = cockpit
        self.diagnosis = diagnosis
        self.version = cockpit.version
        self.original = session.launch
        self.draft = split_command(self.original, self.version, getattr(session.server, "env", None))
        if diagnosis is not None and diagnosis.fix is not None:
            self.draft = self.draft.with_fix(diagnosis.fix)
        self.armed = False
        self.running = False
        self.result: Any = None
        self.error: BaseException | None = None  # what stopped the last relaunch before a result
        self._steps: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        title = f"relaunch · {self.session.label}"
        if self.session.pid:
            title += f" · pid {self.session.pid}"
        with Vertical(classes="dialog", id="relaunch-dialog"):  # its size: spectui.tcss
            yield Static(Text(title), classes="title")  # host names and paths are data, not markup
            if self.session.read_only:
                from spectui.ui.screens.help import read_only_reason

                yield Static(Text(f"read-only session ({read_only_reason(self.session)}): you can edit and see "
                                  "the verdict, but relaunch is disabled", style="bold yellow"))
            group = getattr(self.session, "group", None)
            if group is not None:
                yield Static(Text(f"group relaunch · {group.kind}: {group.describe()}. The edits go to every node "
                                  "(each keeps its own --node-rank, host and environment); every node is stopped, "
                                  "then all start, node 0 first, and must all become healthy — a failure restores "
                                  "the previous command on every node.", style="bold"), id="group-note")
            if self.original is None:
                yield Static(Text("the running server's launch command is not known (no server found on "
                                  "the host): relaunch is disabled", style="bold yellow"))
            elif getattr(getattr(getattr(self.app, "dashboard", None), "health", None), "state", "") == "gone":
                exact = getattr(self.session.server, "pid", None) == self.session.pid
                yield Static(Text(f"pid {self.session.pid} is gone: Relaunch starts its last known command again "
                                  "(nothing to stop), " + ("with the environment read while it ran" if exact else
                                  "its environment not known exactly: this login's, with the launch's own "
                                  "variables"), style="bold yellow"), id="gone-note")
            if self.diagnosis is not None:
                yield Static(Text(f"pre-filled with the fix for {self.diagnosis.rule}: {self.diagnosis.title}",
                                  style="green"))
            with VerticalScroll():
                for f in SPEC_FIELDS:
                    with Horizontal(classes="row"):
                        yield Label(f.label)
                        choices = self.draft.choices.get(f.dest)
                        value = self.draft.values.get(f.dest) or ""
                        if choices:
                            opts = [(str(c), str(c)) for c in choices]
                            if value and value not in [o[1] for o in opts]:
                                opts.append((value, value))
                            yield Select(opts, value=value or Select.NULL, allow_blank=True, id=f"f-{f.dest}",
                                         prompt="(not set)")
                        else:
                            yield Input(value=value, placeholder="(not set)", id=f"f-{f.dest}")
                with Horizontal(classes="row"):
                    yield Label("other flags")
                    yield Input(value=self.draft.other, id="other")
                with Horizontal(classes="row"):
                    yield Label("environment")
                    yield Input(value=self.draft.env, placeholder="NAME=VALUE … (the rest of the server's "
                                "environment is kept as it is)", id="env")
                yield Static(id="verdict")
                yield Prediction(id="prediction")  # the advisor's predicted effect of the edit
            with Vertical(id="bottom"):
                # Beside the buttons: the steps while the relaunch runs, then a failure's reason and rollback
                # (scrolls when a long rollback does not fit).
                with ScrollableContainer(id="progress-box"):
                    yield Static(id="progress")
                with Horizontal(id="buttons"):
                    yield Button("Relaunch", id="go", variant="warning",
                                 disabled=self.session.read_only or self.original is None)
                    yield Button("Cancel", id="cancel")
                    yield Static("ctrl+s relaunch · esc cancel", id="keys")

    def on_mount(self) -> None:
        self._update()
        self.query_one("#f-speculative_num_steps").focus()

    # ---- live verdict ------------------------------------------------------------------------------

    def _current_draft(self) -> Draft:
        values: dict[str, str] = {}
        for f in SPEC_FIELDS:
            widget = self.query_one(f"#f-{f.dest}")
            raw = widget.value if isinstance(widget, Input) else (
                "" if widget.value is Select.NULL else str(widget.value))
            values[f.dest] = raw.strip()
        return dataclasses.replace(self.draft, values=values, other=self.query_one("#other", Input).value,
                                   env=self.query_one("#env", Input).value)

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self) -> None:
        self.armed = False
        self._update()

    def _update(self) -> None:
        self.draft = self._current_draft()
        judged, pending = self._host_verdict()
        self.evaluation = evaluate(self.original, self.draft, self.version, host_judged=judged,
                                   host_pending=pending)
        self.query_one("#verdict", Static).update(self.evaluation.text)
        self.query_one("#prediction", Prediction).show_for(self.original, self.version, self.evaluation,
                                                           self.cockpit)
        go = self.query_one("#go", Button)
        overridden = getattr(self.evaluation.resolution, "verdict", "") == "overridden"
        go.label = (("Confirm (SGLang overrides values): stop and relaunch" if overridden else
                     "Confirm: stop and relaunch") if self.armed else "Relaunch")
        blocked = self.session.read_only or self.original is None or self.running
        go.disabled = blocked or not self.evaluation.launchable

    def _host_verdict(self) -> tuple[Any, bool]:
        """(the host's own verdict on the draft, still asking?) for a source build (`0.5.16.dev0+g…`) of a
        live server; (None, False) otherwise. The first ask for a draft starts a worker (debounced: the
        latest draft wins) whose answer, a Resolution or the reason the host could not say, re-renders."""
        from spectui.core.launch import is_source_build

        server = getattr(self.session, "server", None)
        if self.original is None or server is None or not is_source_build(self.version):
            return None, False
        try:
            cmd = build_command(self.original, self.draft)
        except ValueError:
            return None, False
        from spectui.core.launch import resolvable_args

        key = (tuple(resolvable_args(cmd)), tuple(sorted(cmd.env)))
        cache = self.__dict__.setdefault("_host_verdicts", {})
        if key in cache:
            return cache[key], False
        self.run_worker(self._ask_host(key, cmd), group="host-verdict", exclusive=True)
        return None, True

    async def _ask_host(self, key: Any, cmd: Any) -> None:
        import asyncio

        from spectui.core.launch import HostResolveError, pick_version, resolvable_args, resolve
        from spectui.core.launch import judge_by_host as judge
        from spectui.sources.hostresolve_run import host_resolution

        await asyncio.sleep(0.4)  # typing: only the draft that stays is asked
        args = list(resolvable_args(cmd))
        base = resolve(args, pick_version(self.version)[0], env=dict(cmd.env))
        try:
            dump = await host_resolution(self.session.host, self.session.server, args)
            answer: Any = judge(base, dump, device=str(base.requested.get("device") or "cuda"))
        except HostResolveError as exc:
            answer = str(exc)
        self.__dict__.setdefault("_host_verdicts", {})[key] = answer
        if self.is_mounted:
            self._update()

    # ---- confirm -----------------------------------------------------------------------------------

    @on(Button.Pressed, "#cancel")
    async def _cancel(self) -> None:
        await self.action_dismiss()

    async def action_dismiss(self, result: Any = None) -> None:
        if self.running:  # closing would cancel the worker half-way through the transaction
            self.notify("a relaunch is running: wait for it to end (the steps are shown here)", severity="warning")
            return
        self.dismiss(result)

    @on(Button.Pressed, "#go")
    def action_confirm(self) -> None:
        if self.session.read_only or self.original is None or self.running:
            if self.running:
                self.notify("a relaunch is already running: this confirmation was ignored", severity="warning")
            return
        if not self.evaluation.launchable:
            self.notify("fix the errors shown first", severity="error")
            return
        if not self.armed:
            self.armed = True
            self._update()
            group = getattr(self.session, "group", None)
            what = (f"every node of the {group.kind} group ({group.describe()})" if group is not None
                    else f"pid {self.session.pid}")
            res = getattr(self.evaluation, "resolution", None)
            overridden = "".join(f"; SGLang overrides {o.sentence()}" for o in getattr(res, "overrides", ()))
            self.notify(f"press Relaunch again to stop {what} and start the edited command{overridden}",
                        severity="warning", markup=False)
            return
        # Set before the worker starts, in this same call: a second confirmation (a key repeat, a click
        # and ctrl+s) finds it set and starts nothing.
        self.running = True
        self.armed = False
        self.result, self.error, self._steps = None, None, []
        self._update()
        self.run_relaunch(self.evaluation.command)

    def _secrets(self) -> list[str]:
        from spectui.ui.relaunch_model import draft_secrets

        return draft_secrets(self.draft)

    def _progress(self, step: str, detail: str = "") -> None:
        """Called by ops.relaunch.run (possibly from a thread) for each step."""
        def show() -> None:
            from spectui.ui.relaunch_outcome import live_text

            self._steps.append((step, detail))
            box = self.query_one("#progress", Static)
            box.remove_class("refused")
            box.update(live_text(self._steps, self._secrets()))

        try:
            self.app.call_from_thread(show)
        except RuntimeError:
            show()

    # Not exclusive: an exclusive worker cancels the one running, which would stop the old server and
    # never start the new one. `running` keeps it to one.
    @work(group="relaunch")
    async def run_relaunch(self, command: Any) -> None:
        from spectui.ui.messages import RelaunchFinished
        from spectui.ui.relaunch_model import result_log, run_ops_relaunch
        from spectui.ui.relaunch_outcome import failure_text, refused_text

        try:
            result = await run_ops_relaunch(self.session, command, progress=self._progress,
                                            env_base=self.draft.env_base)
        except Exception as exc:  # noqa: BLE001 - shown to the operator, one line
            self.running, self.armed, self.error = False, False, exc
            box = self.query_one("#progress", Static)
            box.add_class("refused")  # the reason and the way to do it, in full (an owner refusal is long)
            box.update(refused_text(exc, self._secrets()))
            self.notify("relaunch failed: see the reason above the buttons", severity="error", timeout=10)
            self._update()
            return
        self.running, self.armed = False, False
        self.result = result
        healthy = bool(getattr(result, "healthy", False))
        rolled = bool(getattr(result, "rolled_back", False))
        log = result_log(result)
        if log:
            self.app.dashboard.post_message(  # type: ignore[attr-defined]
                RelaunchFinished(result, log_path=log, launch=command if healthy else self.original,
                                 healthy=healthy))
        if healthy and log and getattr(result, "history_id", None):
            record_reached(self.app, self.app.dashboard, log, result.history_id)  # type: ignore[attr-defined]
        if healthy:
            self._progress("healthy", f"now following {log}")
            self.notify("relaunched: following the new log", timeout=6)
            self.dismiss()
            return
        # What runs now is the rollback (or nothing): the next confirmation plans from it.
        rollback = getattr(result, "rollback", None)
        if rolled and rollback is not None:
            self.session.current_pid = rollback.pid
        self.query_one("#progress", Static).remove_class("refused")
        self.query_one("#progress", Static).update(failure_text(result, self._secrets()))
        self.notify("relaunch failed" + (": the previous command runs again" if rolled else ""),
                    severity="error", timeout=10)
        self._update()

    def shlex_preview(self) -> str:
        from spectui.core.secrets import display_argv

        return display_argv(self.evaluation.command.argv) if self.evaluation.command else ""
