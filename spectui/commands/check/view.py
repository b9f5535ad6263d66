"""The human (Rich) summary printed by `spectui check` without --json. Log text is shown as Text, never markup."""

from __future__ import annotations

import re
import shlex
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from spectui.commands.check.scan import CheckResult
from spectui.commands.console import cli_console
from spectui.core.log import MetricSnapshot, RecordKind, ServerPhase, Stat
from spectui.core.text import terminal_safe_short

_PHASE_STYLE = {
    ServerPhase.SERVING: "green", ServerPhase.READY: "green", ServerPhase.CRASHED: "bold red",
    ServerPhase.STOPPED: "yellow", ServerPhase.UNKNOWN: "dim",
}
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_MAX_SHOWN = 10


def _num(v: float | int | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _stat_row(table: Table, name: str, s: Stat, digits: int = 2) -> None:
    table.add_row(name, _num(s.last, digits), _num(s.mean, digits), _num(s.p10, digits), _num(s.p90, digits))


def _clean(text: str, limit: int = 200) -> Text:
    # Log text is data: escapes and controls dropped (core.text), width capped, never markup.
    return Text(terminal_safe_short(text, limit))


def _decode_table(s: MetricSnapshot) -> Table:
    table = Table(title=f"decode (launch {s.launch}, {s.samples} samples)", title_justify="left")
    for col in ("metric", "last", "mean", "p10", "p90"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    _stat_row(table, "accept len", s.accept_len)
    _stat_row(table, "accept rate", s.accept_rate)
    _stat_row(table, "gen tok/s (all DP ranks)", s.gen_tokens_per_s, 1)
    table.add_row("running / queued", f"{_num(s.running_req)} / {_num(s.queue_req)}", "", "", "")
    table.add_row("token usage", _num(s.token_usage), "", "", "")
    table.add_row("graph", _num(None) if s.graph is None else str(s.graph), "", "", "")
    return table


_SPEC_KEYS = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
              "speculative_num_draft_tokens", "max_running_requests", "disable_cuda_graph",
              "disable_overlap_schedule", "tp_size", "dp_size")


def _launches_table(launches: list[MetricSnapshot]) -> Table:
    table = Table(title="launches", title_justify="left")
    for col in ("#", "from line", "phase", "decode lines", "accept len mean", "gen tok/s mean", "errors"):
        table.add_column(col, justify="right" if col not in ("phase",) else "left")
    if len(launches) > _MAX_SHOWN:
        table.caption = f"the last {_MAX_SHOWN} of {launches[-1].launch}"
    for s in launches[-_MAX_SHOWN:]:
        table.add_row(str(s.launch), _num(s.launch_first_line), s.phase.value, str(s.samples),
                      _num(s.accept_len.mean), _num(s.gen_tokens_per_s.mean, 1), str(s.errors))
    return table


def _server_args_line(args: Any) -> Text | None:
    if not args:
        return None
    shown = [(k, args[k]) for k in _SPEC_KEYS if k in args and args[k] is not None]
    if not shown:
        return None
    text = Text("resolved server_args: ", style="bold")
    text.append_text(_clean(", ".join(f"{k}={v}" for k, v in shown), 400))
    return text


def render(result: CheckResult, name: str, console: Console | None = None, *, version: str | None = None,
           version_from: str = "given") -> None:
    """`version`: the release the rules judged with (--sglang-version, or the bundle's recorded one), shown
    instead of the log's guess."""
    console = console or cli_console(highlight=False, soft_wrap=True)
    cur = result.current
    header = Text()
    header.append("spectui check ", style="bold")
    header.append_text(_clean(name))
    console.print(header)
    if result.lines == 0:
        console.print(Text("empty log: nothing to check", style="dim"))
        return
    counts = ", ".join(f"{result.counts.get(k, 0)} {k.value}" for k in RecordKind)
    console.print(Text(f"{result.lines} lines: {counts}"))
    phase = Text("phase: ")
    phase.append(cur.phase.value, style=_PHASE_STYLE.get(cur.phase, "cyan"))
    shown = f"{version} ({version_from})" if version else (result.version_guess or "unknown")
    phase.append(f"   launches: {cur.launch}   SGLang: {shown}")
    console.print(phase)
    if len(result.launches) > 1:
        console.print(_launches_table(result.launches))
    args_line = _server_args_line(cur.server_args)
    if args_line is not None:
        console.print(args_line)
    if cur.samples:
        console.print(_decode_table(cur))
    elif result.counts.get(RecordKind.DECODE):
        console.print(Text("no decode lines in the last launch", style="dim"))
    if result.warnings:
        console.print(Text(f"warnings: {result.counts.get(RecordKind.WARNING, 0)} "
                           f"({len(result.warnings)} distinct)", style="yellow"))
        for w in list(result.warnings.values())[:_MAX_SHOWN]:
            line = Text(f"  line {w.line}: ", style="dim")
            line.append_text(_clean(w.text))
            console.print(line)
    if result.errors_total:
        console.print(Text(f"errors: {result.errors_total}", style="bold red"))
        for e in result.errors[-_MAX_SHOWN:]:
            line = Text(f"  line {e.line}: ", style="dim")
            line.append(e.exc_type, style="red")
            if e.message:
                line.append(": ")
                line.append_text(_clean(e.message))
            console.print(line)
    _render_diagnoses(console, result.diagnoses)


def _render_diagnoses(console: Console, diagnoses: list[Any]) -> None:
    if not diagnoses:
        console.print(Text("diagnoses: none", style="dim"))
        return
    console.print(Text(f"diagnoses: {len(diagnoses)}", style="bold"))
    for d in diagnoses:
        severity = str(getattr(d, "severity", "info"))
        line = Text("  ")
        line.append(f"[{severity}] ", style=_SEVERITY_STYLE.get(severity, ""))
        line.append(str(getattr(d, "rule", "")), style="bold")
        line.append(" ")
        line.append_text(_clean(str(getattr(d, "title", ""))))
        console.print(line)
        message = str(getattr(d, "message", "") or "")
        if message:
            _detail(console, None, _clean(message, 600))
        fix = fix_flags(getattr(d, "fix", None))
        if fix:
            _detail(console, Text("fix: ", style="bold green"), _clean(fix, 400))
        why = first_sentence(str(getattr(d, "explanation", "") or ""))
        if why:
            _detail(console, Text("why: ", style="dim"), _clean(why, 400))
        for ev in tuple(getattr(d, "evidence", ()))[:3]:
            _detail(console, Text("seen: ", style="dim"), _clean(str(ev)))


def _detail(console: Console, label: Text | None, body: Text) -> None:
    """One indented line under a diagnosis; on a terminal it wraps under its own indent, not at column 0."""
    text = Text()
    if label is not None:
        text.append_text(label)
    text.append_text(body)
    if console.is_terminal:
        console.print(Padding(text, (0, 0, 0, 6)), soft_wrap=False)
    else:
        console.print(Text("      ").append_text(text))


def fix_flags(fix: Any) -> str:
    """A Fix as the flags to type: `--speculative-num-steps 15 --disable-cuda-graph; remove --enable-x`."""
    if fix is None:
        return ""
    parts = [flag if value == "" else f"{flag} {shlex.quote(str(value))}"
             for flag, value in dict(getattr(fix, "set", {}) or {}).items()]
    unset = tuple(getattr(fix, "unset", ()) or ())
    text = " ".join(parts)
    if unset:
        text += ("; " if text else "") + "remove " + " ".join(unset)
    return text


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")


def first_sentence(text: str) -> str:
    """The explanation's first sentence (a period inside `0.4.6` or `e.g. the` does not end it)."""
    text = " ".join(text.split())
    if not text:
        return ""
    return _SENTENCE_END.split(text, maxsplit=1)[0]
