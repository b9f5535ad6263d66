"""Fleet screen (`0`, palette "Fleet"): every SGLang server a Prometheus scrapes, worst first (spectui.fleet).

A worker refreshes the table every few seconds (the queries run in a thread); under it, the highlighted
instance's numbers and every diagnosis with its evidence. `enter` on an instance opens it over SSH in a new tab: the SSH target is the instance's host part, or what `--fleet-map FILE`
maps the instance to. `esc` / `q` goes back to the tabs.
"""

from __future__ import annotations

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
from textual.widgets import DataTable, Footer, Static

from spectui.ui.widgets.summary_strip import SEVERITY_MARKS

COLUMNS = ("instance", "job", "up", "accept len", "ceiling", "tok/s", "× base", "running", "queued", "diagnosis")


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
    ]
    DEFAULT_CSS = """
    FleetScreen #fleet-status { height: 1; background: $panel; }
    FleetScreen DataTable { height: 1fr; }
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

    def compose(self) -> ComposeResult:
        yield Static(Text(f" fleet · {self.source.url} · loading…"), id="fleet-status")
        table: DataTable[Text] = DataTable(id="fleet", cursor_type="row", zebra_stripes=True)
        self._columns = table.add_columns(*COLUMNS)
        self._rows: list[str] = []
        yield table
        yield Static(Text(""), id="fleet-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.poll()

    def action_back(self) -> None:
        if self.closable and len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_refresh_now(self) -> None:
        self.poll()

    @work(exclusive=True, group="fleet")
    async def poll(self) -> None:
        import asyncio

        while True:
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
            await asyncio.sleep(self.source.interval)

    def show(self, snap: Any) -> None:
        self.snapshot = snap
        table = self.query_one(DataTable)
        keys = [f"{e.metrics.job}/{e.metrics.instance}" for e in snap.entries]
        if keys == self._rows:  # same instances in the same order: cells updated, the cursor stays put
            for key, entry in zip(keys, snap.entries, strict=True):
                for column, cell in zip(self._columns, row_cells(entry), strict=True):
                    table.update_cell(key, column, cell)
        else:  # the order changed (worst first): the cursor follows its instance
            at = table.cursor_row
            keep = self._rows[at] if 0 <= at < len(self._rows) else None
            table.clear()
            for key, entry in zip(keys, snap.entries, strict=True):
                table.add_row(*row_cells(entry), key=key)
            self._rows = keys
            if keys:
                table.move_cursor(row=keys.index(keep) if keep in keys else 0)
        self._status()
        self._detail(table.cursor_row)

    def _detail(self, row: int) -> None:
        if self.snapshot is None or not 0 <= row < len(self.snapshot.entries):
            return
        entry = self.snapshot.entries[row]
        target = self.source.target_for(entry.metrics.instance, entry.metrics.job)
        self.query_one("#fleet-detail", Static).update(detail_text(entry, target))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    def _status(self) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" fleet ", "bold reverse")
        t.append(f" {self.source.url}")
        if self.snapshot is not None:
            n = len(self.snapshot.entries)
            bad = sum(1 for e in self.snapshot.entries if e.worst == "error")
            t.append(f" · {n} instance{'s' if n != 1 else ''}, {bad} with errors · worst first")
        if self.error:
            t.append(f" · {self.error}", "bold red")
        t.append(" · enter opens over SSH, esc back", "dim")
        self.query_one("#fleet-status", Static).update(t)

    @on(DataTable.RowSelected)
    async def _selected(self, event: DataTable.RowSelected) -> None:
        if self.snapshot is None or event.cursor_row >= len(self.snapshot.entries):
            return
        m = self.snapshot.entries[event.cursor_row].metrics
        await self.open_instance(self.source.target_for(m.instance, m.job), m.instance)
