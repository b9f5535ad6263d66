"""Runs history (`h`): launches seen in this session's logs and relaunches recorded on disk, side by side."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from spectui.ui.model import SHORT_NAMES, LaunchSummary


def _num(v: float | None, fmt: str = ".2f") -> str:
    return "–" if v is None else format(v, fmt)


def settings_diff(prev: dict[str, object] | None, cur: dict[str, object]) -> Text:
    """`steps 1→15, draft tokens 2→16` against the previous launch; all settings for the first one."""
    t = Text(no_wrap=True, overflow="ellipsis")
    items = []
    for key, value in cur.items():
        name = SHORT_NAMES.get(key, key.removeprefix("speculative_").replace("_", " "))
        if prev is None:
            if value is not None and key != "speculative_draft_model_path":
                items.append((f"{name} {value}", ""))
        elif prev.get(key) != value:
            items.append((f"{name} {prev.get(key)}→{value}", "bold yellow"))
    for i, (text, style) in enumerate(items):
        if i:
            t.append(", ")
        t.append(text, style)
    if not items:
        t.append("same flags" if prev is not None else "–", "dim")
    return t


class HistoryScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,h", "dismiss", "Close")]

    def __init__(self, session: Any, cockpit: Any) -> None:
        super().__init__()
        self.session = session
        self.cockpit = cockpit

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("launches in this session's logs", classes="title")
            yield DataTable(id="launches", cursor_type="row", zebra_stripes=True)
            yield Static("relaunches recorded by spectui on this host", classes="title")
            yield DataTable(id="recorded", cursor_type="row", zebra_stripes=True)
            yield Static(Text("esc close", style="dim"))

    def on_mount(self) -> None:
        table = self.query_one("#launches", DataTable)
        table.add_columns("launch", "line", "decode lines", "accept len mean (p10–p90)", "gen tok/s mean",
                          "flags (vs previous)")
        prev: dict[str, object] | None = None
        summaries: list[LaunchSummary] = self.cockpit.launch_summaries()
        for s in summaries:
            cur = dict(s.settings)
            table.add_row(
                Text(s.label), str(s.first_line or "–"), str(s.samples),
                f"{_num(s.accept_len_mean)} ({_num(s.accept_len_p10)}–{_num(s.accept_len_p90)})",
                _num(s.gen_tokens_per_s_mean, ".1f"), settings_diff(prev, cur),
            )
            prev = cur
        if not summaries:
            table.add_row("–", "–", "0", Text("no decode lines seen yet", style="dim"), "", "")
        recorded = self.query_one("#recorded", DataTable)
        recorded.add_columns("started", "outcome", "accept len", "gen tok/s", "changes", "Δ accept len",
                             "Δ tok/s", "verdict", "log")
        self.load_recorded()

    @work(thread=True, exclusive=True)
    def load_recorded(self) -> None:
        from spectui.ops.history import read_history

        host = getattr(self.session.host, "name", None) or self.session.label  # ops records the Host's name
        records = read_history(host=host, limit=50)
        self.app.call_from_thread(self._show_recorded, records)

    def _show_recorded(self, records: list[Any]) -> None:
        table = self.query_one("#recorded", DataTable)
        ordered = sorted(records, key=lambda r: r.time)
        before: dict[str, Any] = {}
        last: dict[str | None, Any] = {}  # a group relaunch's nodes each compare with the same node's last launch
        for cur in ordered:
            before[cur.id] = last.get(cur.node)
            last[cur.node] = cur
        for r in records:
            changes = r.changes_summary()  # flags and environment (an env-only relaunch is not "–")
            style = {"healthy": "green", "failed": "bold red", "rolled_back": "yellow"}.get(r.outcome, "")
            d_acc, d_tps, verdict = deltas(before.get(r.id), r)
            started = r.time + (f" · {r.node}" if r.node else "")  # one row per node of a group relaunch
            table.add_row(Text(started), Text(r.outcome, style=style), _num(r.accept_len),
                          _num(r.gen_tokens_per_s, ".1f"), Text(changes, overflow="ellipsis"), d_acc, d_tps,
                          verdict, Text(r.log or "–"))
        if not records:
            table.add_row("–", Text("none recorded", style="dim"), "", "", "", "", "", "", "")


SAME = 0.03  # relative change under which a relaunch is judged the same (noise of a short observation)


def deltas(prev: Any, cur: Any) -> tuple[Text, Text, Text]:
    """Before/after of one relaunch against the launch before it: Δ accept len, Δ tok/s and a verdict
    (better / worse / same on tok/s, else on accept len; '–' when either side was not measured)."""
    def one(a: Any, b: Any, fmt: str) -> tuple[Text, float | None]:
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return Text("–", style="dim"), None
        rel = (b - a) / a if a else None
        pct = f" ({rel:+.0%})" if rel is not None else ""
        return Text(f"{b - a:+{fmt}}{pct}", style="green" if b > a else "red" if b < a else ""), rel

    acc, acc_rel = one(getattr(prev, "accept_len", None), cur.accept_len, ".2f")
    tps, tps_rel = one(getattr(prev, "gen_tokens_per_s", None), cur.gen_tokens_per_s, ".1f")
    rel = tps_rel if tps_rel is not None else acc_rel
    if rel is None or cur.outcome != "healthy":
        return acc, tps, Text("–", style="dim")
    if abs(rel) < SAME:
        return acc, tps, Text("same")
    return acc, tps, Text("better", style="bold green") if rel > 0 else Text("worse", style="bold red")
