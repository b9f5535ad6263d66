"""Fleet screen (`0`, palette "Fleet"): every SGLang server a Prometheus scrapes, worst first (spectui.fleet).

A worker refreshes the table every few seconds (the queries run in a thread); under it, the highlighted
instance's numbers and every diagnosis with its evidence. The table is virtual (widgets.fleet_table): a
refresh or a re-order of 10,000 instances is list work, only the rows on screen are drawn. `o` orders by
another column (worst first, accept len, tok/s, instance); the cursor stays on its instance. `enter` on an instance opens it over SSH in a new tab: the SSH target is the instance's host part, or what `--fleet-map FILE`
maps the instance to. `esc` / `q` goes back to the tabs.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Static

from spectui.ui.widgets.fleet_table import FleetTable
from spectui.ui.widgets.summary_strip import SEVERITY_MARKS

COLUMNS = ("instance", "job", "up", "accept len", "ceiling", "tok/s", "× base", "running", "queued", "diagnosis")
RIGHT = frozenset({3, 4, 5, 6, 7, 8})  # numbers
NUMBER_WIDTH = 8  # "1234567" tok/s, "0.95×"


def _accept_len(e: Any) -> float:
    x = e.metrics.accept_len
    return math.inf if x is None else x


def _tps(e: Any) -> float:
    x = e.metrics.gen_tokens_per_s
    return math.inf if x is None else x


# (name, sort key or None for the snapshot's own worst-first order); `o` cycles through them. The keys
# return values the entries already hold (no tuple a row): sorting 10,000 allocates nothing for the
# collector to walk. Unknown values sort last; ties keep the worst-first order (the sort is stable).
ORDERS: tuple[tuple[str, Callable[[Any], Any] | None], ...] = (
    ("worst first", None),
    ("accept len, lowest first", _accept_len),
    ("tok/s, lowest first", _tps),
    ("instance", lambda e: e.metrics.instance),
)


def column_widths(entries: list[Any]) -> list[int]:
    """Widths from the label values alone (no cell is built): instance and job as wide as the widest
    (capped), the numbers fixed, the diagnosis whatever is left (the line is cropped to the screen)."""
    inst = max((len(e.metrics.instance) for e in entries), default=8)
    job = max((len(e.metrics.job) for e in entries), default=3)
    return [min(inst, 48), min(job, 24), 4, 10, 7, NUMBER_WIDTH, 6, 7, 6, 60]


def instance_host(instance: str) -> str:
    """`10.0.0.5:30000` -> `10.0.0.5`; `[fe80::1]:30000` -> `fe80::1`; `gpu1` -> `gpu1`."""
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    host, sep, port = instance.rpartition(":")
    return host if sep and port.isdigit() else instance


def instance_port(instance: str) -> int | None:
    """`10.0.0.5:30000` -> 30000 (SGLang serves /metrics on its HTTP port); None without a port."""
    _host, sep, port = instance.rpartition(":")
    return int(port) if sep and port.isdigit() and not instance.endswith("]") else None


def read_fleet_map(text: str) -> dict[str, str]:
    """`instance  ssh-target` per line (whitespace or `=` between), `#` comments."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace("=", " ", 1).split()
        if len(parts) != 2:
            raise ValueError(f"line {n}: write INSTANCE SSH-TARGET, e.g. 10.0.0.5:30000 root@gpu5")
        out[parts[0]] = parts[1]
    return out


@dataclass
class FleetSource:
    """How the screen gets a FleetSnapshot (`collect`, blocking: run in a thread) and where instances live."""

    collect: Callable[[], Any]
    interval: float = 5.0
    mapping: Mapping[str, str] = field(default_factory=dict)
    url: str = ""

    def target_for(self, instance: str, job: str = "") -> str:
        """The map's SSH target, else the instance's host. A loopback instance runs where Prometheus runs:
        `local` when that is this machine (a loopback URL), else Prometheus's own host."""
        mapped = self.mapping.get(f"{job}/{instance}") or self.mapping.get(instance)
        if mapped:
            return mapped
        host = instance_host(instance)
        if not _loopback(host):
            return host
        prom = urlsplit(self.url).hostname if self.url else None
        return "local" if prom is None or _loopback(prom) else prom


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def _f(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def row_cells(entry: Any) -> tuple[Text, ...]:
    m = entry.metrics
    worst = entry.worst
    mark, style = SEVERITY_MARKS.get(worst or "", ("", ""))
    first = entry.diagnoses[0] if entry.diagnoses else None
    diag = Text(f"{mark} {first.rule} {first.title}" if first else "", style=style)
    up = Text("up", "green") if m.up else Text("DOWN" if m.up is False else "?", "bold red")
    return (Text(m.instance, "bold"), Text(m.job), up, Text(_f(m.accept_len, ".2f")),
            Text(str(m.ceiling) if m.ceiling else "–"), Text(_f(m.gen_tokens_per_s, ".0f")), _ratio_cell(m),
            Text("–" if m.running is None else str(m.running)), Text("–" if m.queued is None else str(m.queued)),
            diag)


def _ratio_cell(m: Any) -> Text:
    r = m.vs_baseline
    if r is None:
        return Text("–")
    return Text(f"{r:.2f}×", "bold red" if r < 1.0 else "green")


def detail_text(entry: Any, target: str) -> Text:
    """The highlighted instance: its numbers, then every diagnosis with message and evidence. Label values
    (instance, job, model) come from Prometheus: plain Text, never markup."""
    m = entry.metrics
    t = Text()
    t.append(f" {m.instance}", "bold")
    t.append(f"  job {m.job}  ")
    t.append(*(("up", "green") if m.up else (("DOWN", "bold red") if m.up is False else ("up ?", "yellow"))))
    if m.models:
        t.append(f"  model {', '.join(m.models)}", "dim")
    parts = []
    if m.accept_len is not None:
        spec = f"accept len {m.accept_len:.2f}"
        if m.ceiling:
            spec += f" of a possible {m.ceiling}"
        shape = ", ".join(x for x in (f"steps {m.steps}" if m.steps else "",
                                      f"draft tokens {m.draft_tokens}" if m.draft_tokens else "") if x)
        parts.append(spec + (f" ({shape})" if shape else ""))
        if m.saturation is not None:
            parts.append(f"saturation {m.saturation:.2f}")
        if m.accept_rate is not None:
            parts.append(f"accept rate {m.accept_rate:.2f}")
    elif m.up is not False:
        parts.append("speculative, no accept length yet" if m.speculative else "no speculation")
    if parts:
        t.append("\n " + " · ".join(parts))
    parts = []
    if m.gen_tokens_per_s is not None:
        speed = f"{m.gen_tokens_per_s:.1f} tok/s"
        r = m.vs_baseline
        if r is not None:
            speed += f" = {r:.2f}× the {m.baseline_tps:.1f} tok/s baseline"
        parts.append(speed)
    if m.running is not None or m.queued is not None:
        parts.append(f"{_f_int(m.running)} running, {_f_int(m.queued)} queued")
    if m.ranks > 1:
        parts.append(f"{m.ranks} DP ranks")
    if parts:
        t.append("\n " + " · ".join(parts))
    for d in entry.diagnoses:
        mark, style = SEVERITY_MARKS.get(d.severity, ("", ""))
        t.append(f"\n {mark} {d.rule} {d.title}", style)
        t.append(f"\n   {d.message}")
        if d.evidence:
            t.append("\n   " + " · ".join(d.evidence), "dim")
    if not entry.diagnoses:
        t.append("\n nothing to say: within its ceiling and its baseline", "green")
    t.append(f"\n enter: open {target} over SSH", "dim")
    return t


def _f_int(x: int | None) -> str:
    return "–" if x is None else str(x)


class FleetScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("R", "refresh_now", "Refresh"),
        Binding("o", "cycle_order", "Order"),
    ]
    DEFAULT_CSS = """
    FleetScreen #fleet-status { height: 1; background: $panel; }
    FleetScreen FleetTable { height: 1fr; }
    FleetScreen #fleet-detail { height: auto; max-height: 45%; border-top: solid $panel-lighten-2;
                                padding: 0 1 0 0; }
    """

    def __init__(self, source: FleetSource, open_instance: Callable[[str, str], Awaitable[None]], *,
                 closable: bool = True) -> None:
        super().__init__()
        self.closable = closable  # False when it is the first screen (no tab to go back to)
        self.source = source
        self.open_instance = open_instance
        self.snapshot: Any = None
        self.error: str | None = None
        self.refreshes = 0
        self.order = 0  # index into ORDERS
        self._errors = 0  # instances of the snapshot with an error-severity diagnosis
        self.entries: list[Any] = []  # the snapshot's entries in the shown order

    def compose(self) -> ComposeResult:
        yield Static(Text(f" fleet · {self.source.url} · loading…"), id="fleet-status")
        yield FleetTable(COLUMNS, row_cells, right=RIGHT, id="fleet")
        yield Static(Text(""), id="fleet-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FleetTable).focus()
        self.poll()

    def action_back(self) -> None:
        if self.closable and len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_refresh_now(self) -> None:
        self.poll()

    def action_cycle_order(self) -> None:
        self.order = (self.order + 1) % len(ORDERS)
        if self.snapshot is not None:
            self._fill(self.snapshot.entries)
        self._status()

    @work(exclusive=True, group="fleet")
    async def poll(self) -> None:
        import asyncio

        while True:
            started = asyncio.get_running_loop().time()
            try:
                snap = await asyncio.to_thread(self.source.collect)
                self.error = None
            except Exception as exc:  # noqa: BLE001 - Prometheus down: said on the status line, retried
                self.error, snap = (str(exc).splitlines()[0] if str(exc) else type(exc).__name__), None
            if not self.is_attached or self not in self.app.screen_stack:
                return  # the screen was closed while Prometheus was being asked
            try:
                self.show(snap) if snap is not None else self._status()
            except NoMatches:
                return  # being taken apart
            self.refreshes += 1
            # on a fixed cadence (a slow Prometheus does not stretch the period), yet never back to back:
            # the collecting thread shares the interpreter with the keys
            spent = asyncio.get_running_loop().time() - started
            await asyncio.sleep(max(self.source.interval - spent, 0.2 * self.source.interval))

    def show(self, snap: Any) -> None:
        self.snapshot = snap
        self._errors = sum(1 for e in snap.entries if e.worst == "error")
        self._fill(snap.entries)
        self._status()

    def _fill(self, entries: list[Any]) -> None:
        """The table in the current order; the cursor follows its instance (worst first moves rows)."""
        table = self.query_one(FleetTable)
        at = table.cursor_row
        keep = table.keys[at] if 0 <= at < len(table.keys) else None
        key = ORDERS[self.order][1]
        ordered = list(entries) if key is None else sorted(entries, key=key)
        keys = [f"{e.metrics.job}/{e.metrics.instance}" for e in ordered]
        cursor = 0
        if keep is not None:
            if at < len(keys) and keys[at] == keep:
                cursor = at
            else:
                cursor = next((i for i, k in enumerate(keys) if k == keep), 0)
        self.entries = ordered
        table.set_rows(ordered, keys, column_widths(ordered), cursor=cursor)

    def _detail(self, row: int) -> None:
        if not 0 <= row < len(self.entries):
            return
        entry = self.entries[row]
        target = self.source.target_for(entry.metrics.instance, entry.metrics.job)
        self.query_one("#fleet-detail", Static).update(detail_text(entry, target))

    @on(FleetTable.RowHighlighted)
    def _highlighted(self, event: FleetTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    def _status(self) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" fleet ", "bold reverse")
        t.append(f" {self.source.url}")
        if self.snapshot is not None:
            n = len(self.snapshot.entries)
            bad = self._errors
            t.append(f" · {n:,} instance{'s' if n != 1 else ''}, {bad:,} with errors · {ORDERS[self.order][0]}")
        if self.error:
            t.append(f" · {self.error}", "bold red")
        t.append(" · enter opens over SSH, o orders, esc back", "dim")
        self.query_one("#fleet-status", Static).update(t)

    @on(FleetTable.RowSelected)
    async def _selected(self, event: FleetTable.RowSelected) -> None:
        if not 0 <= event.cursor_row < len(self.entries):
            return
        m = self.entries[event.cursor_row].metrics
        await self.open_instance(self.source.target_for(m.instance, m.job), m.instance)
