"""Sweep from the cockpit (`w`): edit a grid of speculative flags (one input per axis), see the plan first
(the resolver's verdict per combination: launch, duplicate of #N, skipped with SGLang's reason, and the
estimated duration), confirm (ctrl+s twice), then watch every config relaunched and benched through
ops.sweep in a worker (the log keeps flowing; the dashboard follows each new server): status, accept len,
per-request speed and × baseline per config in a table. Esc while it runs is the sweep's own Ctrl-C: the
config under way is abandoned and the original command runs again. Read-only sessions plan only."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, DataTable, Input, Label, Static

REQUESTS, CONCURRENCY, MAX_TOKENS, WARMUP = 16, 4, 128, 1  # a quick look: `spectui sweep` for a study
AXES = (("steps", "speculative-num-steps", "1,2,3,5"), ("topk", "speculative-eagle-topk", "1"),
        ("draft tokens", "speculative-num-draft-tokens", ""))
COLUMNS = (("#", "idx"), ("set", "set"), ("eff s/t/d", "eff"), ("plan / status", "status"),
           ("accept len", "accept"), ("per-req tok/s", "per"), ("× baseline", "x"))


def _f(x: Any, spec: str = ".1f") -> str:
    return "–" if not isinstance(x, int | float) else format(x, spec)


def grid_items(values: dict[str, str], more: str) -> list[str]:
    """`--grid` items from the inputs: FLAG=V1,V2 per non-empty axis, then the extra ones as typed."""
    items = [f"{flag}={values[flag].replace(' ', '')}" for _, flag, _ in AXES if values.get(flag, "").strip()]
    return items + more.split()


def verdict(c: Any) -> str:
    if c.status == "duplicate":
        return f"duplicate of #{c.same_as}"
    if c.status == "skipped":
        return "skipped: SGLang refuses it"
    return "launch"


def entry_cells(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    """status, accept len, per-request tok/s, × baseline of a finished config."""
    from spectui.ops.sweep.results import accept_len, per_request

    b = entry.get("bench") or {}
    up = (b.get("speedup") or {}).get("per_request_tokens_per_s")
    if up is None:
        up = (b.get("speedup") or {}).get("output_tokens_per_s")
    status = entry["status"]
    if status == "failed" and entry.get("reason"):
        status = f"failed: {str(entry['reason']).split(':')[0]}"
    return status, _f(accept_len(entry), ".2f"), _f(per_request(entry)), _f(up, ".2f")


class SweepScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "close", "Close / cancel"), Binding("ctrl+s", "confirm", "Run")]
    DEFAULT_CSS = """
    SweepScreen #sweep-dialog { height: 90%; padding: 0 1; }
    SweepScreen .axis { height: 3; }
    SweepScreen .axis Label { width: 14; padding: 1 1 0 0; }
    SweepScreen .axis Input { width: 1fr; }
    SweepScreen #sweep-table { height: 1fr; }
    SweepScreen #sweep-status { height: auto; max-height: 6; }
    """

    def __init__(self, session: Any, cockpit: Any) -> None:
        super().__init__()
        self.session, self.cockpit = session, cockpit
        self.plan: Any = None
        self.planned_for: tuple[Any, ...] | None = None
        self.estimate: dict[str, Any] | None = None
        self.sweep: Any = None
        self.armed = self.running = False
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.live = bool(session.host is not None and not getattr(session, "replay", False))

    def compose(self) -> ComposeResult:
        with Vertical(id="sweep-dialog", classes="dialog"):
            yield Static(f"sweep · {self.session.label}", classes="title")
            for label, flag, default in AXES:
                with Horizontal(classes="axis"):
                    yield Label(label)
                    yield Input(default, id=f"axis-{flag}", placeholder="V1,V2,… (empty: not swept)")
            with Horizontal(classes="axis"):
                yield Label("more axes")
                yield Input("", id="axis-more", placeholder="FLAG=V1,V2 env:NAME=V1,V2 (- = absent)")
            yield Checkbox("measure the baseline first (relaunch once without speculation)", id="sweep-baseline")
            yield Static(Text(f"each config: {REQUESTS} requests, concurrency {CONCURRENCY}, max_tokens "
                              f"{MAX_TOKENS} after {WARMUP} warm-up", style="dim"), id="sweep-workload")
            yield DataTable(id="sweep-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="sweep-status")
            yield Static(Text("enter plan · ctrl+s run (arm, then confirm) · esc close; while running esc "
                              "cancels and restores the original command", style="dim"), id="sweep-keys")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for title, key in COLUMNS:
            table.add_column(title, key=key)
        if not self.live:
            self._say("no live server here (a recorded log): nothing to sweep")
            return
        self.make_plan()

    # ---- inputs and plan ---------------------------------------------------------------------------

    def _say(self, text: str | Text) -> None:
        self.query_one("#sweep-status", Static).update(text)

    def _inputs(self) -> tuple[Any, ...]:
        values = tuple(self.query_one(f"#axis-{flag}", Input).value for _, flag, _ in AXES)
        return (*values, self.query_one("#axis-more", Input).value, self.query_one(Checkbox).value)

    def _options(self) -> Any:
        from spectui.load import BenchConfig, load_prompts
        from spectui.ops.sweep.run import SweepOptions

        c, s = self.cockpit, self.session
        base = getattr(c, "baseline", None)
        measure = bool(self.query_one(Checkbox).value)
        config = BenchConfig("http://127.0.0.1", requests=REQUESTS, concurrency=CONCURRENCY, max_tokens=MAX_TOKENS,
                             warmup=WARMUP)
        port = s.server_port or getattr(s.server, "port", None)
        return SweepOptions(config, load_prompts("mixed"), pid=s.pid, server_port=port, measure_baseline=measure,
                            baseline_tps=None if measure or base is None else float(base))

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def _edited(self) -> None:
        if self.armed:
            self.armed = False
            self._say("the grid changed: enter re-plans")

    @on(Input.Submitted)
    def _submitted(self) -> None:
        if self.live and not self.running:
            self.make_plan()

    @work(exclusive=True, group="sweep-plan")
    async def make_plan(self) -> None:
        from spectui.errors import SpectuiError
        from spectui.ops.sweep.journal import Journal, default_journal_path
        from spectui.ops.sweep.plan import estimate_for, parse_grid
        from spectui.ops.sweep.run import Sweep

        inputs = self._inputs()
        self.plan, self.armed = None, False
        self._say("planning…")
        try:
            values = {flag: v for (_, flag, _), v in zip(AXES, inputs, strict=False)}
            axes = parse_grid(grid_items(values, inputs[len(AXES)]))
            sweep = Sweep(self.session.host, axes, self._options(), Journal(default_journal_path()),
                          on_note=self._note, on_event=self._event)
            plan = await sweep.make_plan()
            est = await estimate_for(self.session.host, plan, sweep.opt)
        except (SpectuiError, OSError) as exc:
            self.error = str(exc)
            self._say(Text(f"cannot plan: {exc}", style="bold red"))
            return
        self.error = None
        self.sweep, self.plan, self.estimate, self.planned_for = sweep, plan, est, inputs
        self._show_plan()

    def _show_plan(self) -> None:
        from spectui.ops.sweep.results import eff_text, set_text

        table = self.query_one(DataTable)
        table.clear()
        for c in self.plan.configs:
            shown = {k: "-" if v is None else v for k, v in c.set.items()}
            table.add_row(str(c.index), set_text(shown), eff_text(c.effective), verdict(c), "", "", "",
                          key=str(c.index))
        self._say(self._plan_text())

    def _plan_text(self) -> Text:
        plan, est = self.plan, self.estimate or {}
        t = Text()
        n = len(plan.to_launch)
        t.append(f"{n} launches", "bold")
        t.append(f" (+1 to put the command back{', +2 for the baseline' if est.get('baseline') else ''}); about "
                 f"{est.get('total_s', 0) / 60:.1f} min ({est.get('per_config_s', 0):.0f} s each, start-up from "
                 f"{est.get('startup_from')}); SGLang {plan.version}\n")
        for c in plan.configs:
            if c.status == "skipped":
                t.append(f"#{c.index} skipped: {c.reason}\n", "yellow")
        if self.session.read_only:
            from spectui.ui.screens.help import read_only_reason

            t.append(f"read-only session: plan only ({read_only_reason(self.session)})", "bold yellow")
        elif n == 0:
            t.append("nothing to launch: every combination is refused or a duplicate", "bold yellow")
        else:
            t.append("ctrl+s to run", "bold")
        return t

    # ---- run ------------------------------------------------------------------------------------------

    def action_confirm(self) -> None:
        if self.running or not self.live:
            return
        if self.session.read_only:
            self._say(Text("read-only session: the sweep relaunches the server; plan only", style="bold yellow"))
            return
        if self.plan is None or self.planned_for != self._inputs():
            self.make_plan()
            return
        if not self.plan.to_launch:
            return
        if not self.armed:
            self.armed = True
            self._say(Text(f"ctrl+s again: relaunches this server {len(self.plan.to_launch) + 1} times or more "
                           "(esc while it runs restores the original)", style="bold yellow"))
            return
        self.armed, self.running = False, True
        for widget in self.query(Input):
            widget.disabled = True
        self.query_one(Checkbox).disabled = True
        self.run_sweep()

    def _note(self, message: str) -> None:
        if self.running:
            self._say(Text(message.strip()[:300], style="dim"))

    def _cell(self, index: int, column: str, value: str) -> None:
        table = self.query_one(DataTable)
        try:
            table.update_cell(str(index), column, value)
        except Exception:  # a row the table no longer has (re-planned): nothing to show
            return

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        if not self.running or not self.is_attached:
            return
        if kind == "config":
            if data.get("entry"):
                status, accept, per, up = entry_cells(data["entry"])
                for col, val in (("status", status), ("accept", accept), ("per", per), ("x", up)):
                    self._cell(data["index"], col, val)
            else:
                self._cell(data["index"], "status", str(data["status"]))
        elif kind == "progress":
            p = data["progress"]
            self._cell(data["index"], "status", f"benching {p.ok + p.failed}/{p.total or '?'}")
        elif kind == "baseline":
            base = data.get("baseline")
            if base:
                self._say(f"baseline measured: {_f(base.get('output_tokens_per_s'))} tok/s without speculation")
            else:
                self._say(f"baseline: {data.get('error') or data.get('status')}")

    def action_close(self) -> None:
        if self.running:
            if self.sweep is not None:
                self.sweep.interrupt()
            self._say(Text("cancelling: the config under way is abandoned, then the original command runs "
                           "again; wait for it", style="bold yellow"))
            return
        self.dismiss()

    # Not exclusive: an exclusive worker is cancelled by the next one, which would stop a relaunch half-way.
    @work(group="sweep-run")
    async def run_sweep(self) -> None:
        from spectui.errors import SpectuiError

        try:
            out = await self.sweep.run()
        except (SpectuiError, OSError) as exc:
            self.running, self.error = False, str(exc)
            self._say(Text(f"sweep failed: {exc}", style="bold red"))
            return
        self.running, self.result = False, out
        self._follow(out)
        self._say(self._result_text(out))

    def _follow(self, out: dict[str, Any]) -> None:
        """The dashboard follows what runs at the end (if its successor watch has not already)."""

        from spectui.core.launch import parse_command
        from spectui.ops.relaunch.outcome import Attempt
        from spectui.ui.messages import RelaunchFinished, Restarted

        restore, cur = out.get("restore") or {}, self.sweep.current
        if not restore.get("healthy") or cur is None or cur.pid is None:
            return
        log = restore.get("log")
        self.session.current_pid = cur.pid
        if log:
            result = Restarted(Attempt(pid=cur.pid, log=log, healthy=True))
            self.app.dashboard.post_message(  # type: ignore[attr-defined]
                RelaunchFinished(result, log_path=log, launch=parse_command(list(cur.argv)), healthy=True))

    def _result_text(self, out: dict[str, Any]) -> Text:
        restore = out.get("restore") or {}
        t = Text()
        t.append("interrupted · " if out.get("interrupted") else "done · ", "bold")
        t.append(f"best: {out.get('why')}\n")
        base = out.get("baseline") or {}
        if base:
            t.append(f"baseline {_f(base.get('output_tokens_per_s'))} tok/s ({base.get('source')})\n", "dim")
        state = ("healthy", "bold green") if restore.get("healthy") else ("NOT healthy", "bold red")
        t.append(f"{out.get('applied')} command runs, pid {restore.get('pid')} ")
        t.append(state[0], state[1])
        t.append(f" · {out.get('launches')} launches · journal {out.get('journal')}", "dim")
        return t
