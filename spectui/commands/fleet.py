"""`spectui fleet --prometheus URL [--selector S] [--json] [--watch]`: every SGLang server, worst first.

Exit codes: 0 fine; 1 an instance has an error-severity diagnosis (down, draft useless, slower than its
baseline) or Prometheus could not be asked; 2 bad input (URL, selector, a selector matching nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

ENV_URL = "SPECTUI_PROMETHEUS"
PROG = "spectui fleet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prometheus", metavar="URL", default=os.environ.get(ENV_URL),
                        help=f"the Prometheus server scraping the SGLang servers (default: ${ENV_URL})")
    parser.add_argument("--selector", metavar="S", default="",
                        help="label matchers picking the servers, e.g. 'job=\"sglang\"' (default: every job "
                             "with SGLang metrics)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (CONTRACTS.md); with --watch one a line per refresh")
    parser.add_argument("--watch", action="store_true", help="refresh until interrupted (or --duration)")
    parser.add_argument("--interval", type=float, default=5.0, metavar="S", help="seconds between refreshes (5)")
    parser.add_argument("--duration", type=float, metavar="S", help="with --watch: stop after S seconds")
    parser.add_argument("--window", default="1m", metavar="DUR",
                        help="look-back for 'queue never emptied' and rate() fallbacks (Prometheus duration, 1m)")
    parser.add_argument("--baseline-tps", type=float, metavar="TPS",
                        help="decode tok/s of each server without speculation (slower-than-baseline diagnosis)")
    parser.add_argument("--baseline", action="append", default=[], metavar="INSTANCE=TPS",
                        help="the baseline of one instance (host:port, or job/host:port); repeatable")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S",
                        help="HTTP read timeout per query (10); each whole answer within twice that, 64 MiB at most")


def _fail(message: str, code: int) -> int:
    from spectui.core.text import terminal_safe

    # Prometheus's own error text (and the labels in it) is data: one clean line.
    print(f"{PROG}: {terminal_safe(' '.join(str(message).split()))}", file=sys.stderr)
    return code


def _baselines(args: argparse.Namespace) -> Any:
    from spectui.fleet import Baselines, FleetInputError

    if args.baseline_tps is not None and not args.baseline_tps > 0:
        raise FleetInputError("--baseline-tps must be > 0 tok/s")
    per: dict[str, float] = {}
    for item in args.baseline:
        name, eq, value = item.rpartition("=")
        try:
            tps = float(value)
        except ValueError:
            tps = -1.0
        if not eq or not name or not tps > 0:
            raise FleetInputError(f"--baseline {item!r}: write INSTANCE=TPS, e.g. 10.0.0.5:30000=90")
        per[name] = tps
    return Baselines(default=args.baseline_tps, per_instance=per)


def run(args: argparse.Namespace) -> int:
    from spectui.errors import SpectuiError

    if not args.prometheus:
        return _fail(f"error: give --prometheus URL (or set ${ENV_URL}), e.g. --prometheus http://127.0.0.1:9090", 2)
    if not args.interval > 0 or (args.duration is not None and not args.duration > 0) or not args.timeout > 0:
        return _fail("error: --interval, --duration and --timeout must be > 0 seconds", 2)
    if args.duration is not None and not args.watch:
        return _fail("error: --duration goes with --watch", 2)
    try:
        from spectui.fleet import PrometheusClient, check_window

        baselines = _baselines(args)
        check_window(args.window)
        client = PrometheusClient(args.prometheus, timeout=args.timeout)
    except SpectuiError as exc:
        return _fail(str(exc), exc.exit_code)
    with client:
        if args.watch:
            return _watch(args, client, baselines)
        try:
            snapshot = _snapshot(args, client, baselines)
        except SpectuiError as exc:
            return _fail(str(exc), exc.exit_code)
        _emit(args, snapshot)
        return snapshot.exit_code


def _snapshot(args: argparse.Namespace, client: Any, baselines: Any) -> Any:
    from spectui.fleet import collect

    return collect(client, args.selector, baselines=baselines, window=args.window)


def _emit(args: argparse.Namespace, snapshot: Any) -> None:
    if args.json:
        from spectui.core.text import json_text

        sys.stdout.write(json_text(snapshot.to_json()) + "\n")  # no raw C1/bidi from a label reaches a pipe
        sys.stdout.flush()
    else:
        console = _console()
        table, notes = _render(snapshot)
        console.print(table)
        for note in notes:  # whole lines, never wrapped: grep-able
            console.print(note, soft_wrap=True)


def _watch(args: argparse.Namespace, client: Any, baselines: Any) -> int:
    """Refresh every --interval; the first refresh's errors end the run, later ones are reported and retried.
    Refreshes start on a fixed cadence (a refresh that takes 1.6 s of a 5 s interval is followed by 3.4 s of
    sleep, not 5); one that takes longer than the interval is followed by the next at once."""
    from spectui.errors import SpectuiError

    deadline = None if args.duration is None else time.monotonic() + args.duration
    live = None
    if not args.json and sys.stdout.isatty():
        from rich.live import Live

        live = Live(console=_console(), auto_refresh=False)
        live.start()
    code = 0
    first = True
    try:
        while True:
            started = time.monotonic()
            try:
                snapshot = _snapshot(args, client, baselines)
            except SpectuiError as exc:
                if first:
                    return _fail(str(exc), exc.exit_code)
                _fail(f"{exc} (retrying in {args.interval:g}s)", exc.exit_code)
                code = exc.exit_code
            else:
                code = snapshot.exit_code
                if live is not None:
                    from rich.console import Group

                    table, notes = _render(snapshot)
                    live.update(Group(table, *notes), refresh=True)
                else:
                    _emit(args, snapshot)
            first = False
            pause = max(0.0, args.interval - (time.monotonic() - started))
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return code
                pause = min(pause, left)
            time.sleep(pause)
            if deadline is not None and time.monotonic() >= deadline:
                return code
    except KeyboardInterrupt:
        return code
    finally:
        if live is not None:
            live.stop()


# ---------------------------------------------------------------------------------------------- view

_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def _console() -> Any:
    from spectui.commands.console import cli_console

    # Not a terminal: wide enough that a table row stays one line (rich would assume 80 columns).
    return cli_console(highlight=False)


def _data(value: object, limit: int | None = None, style: str = "") -> Any:
    """A value from Prometheus (a label, an error) as a table cell or note: plain text through the one
    cleaner (core.text), never markup; rich's Text is never parsed for [tags]."""
    from rich.text import Text

    from spectui.core.text import terminal_safe, terminal_safe_short

    text = str(value)
    return Text(terminal_safe_short(text, limit) if limit else terminal_safe(text), style=style)


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _render(snapshot: Any) -> tuple[Any, list[Any]]:
    """A compact table (worst first), and one line per diagnosis to print under it."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    with_base = any(e.metrics.baseline_tps for e in snapshot.entries)  # "x base": only when a baseline is given
    for name, justify in (("instance", "left"), ("job", "left"), ("state", "left"), ("accept", "right"),
                          ("rate", "right"), ("tok/s", "right"), *((("x base", "right"),) if with_base else ()),
                          ("run", "right"), ("queue", "right"), ("spec", "left"), ("diagnosis", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "diagnosis")  # type: ignore[arg-type]
    notes: list[Any] = []
    for entry in snapshot.entries:
        m = entry.metrics
        state = {True: "up", False: "DOWN", None: "?"}[m.up]
        accept = _num(m.accept_len, ".2f") + (f"/{m.ceiling}" if m.ceiling and m.accept_len is not None else "")
        top = entry.diagnoses[0] if entry.diagnoses else None
        style = _STYLE.get(top.severity, "") if top else ""
        ratio = m.vs_baseline
        base = (Text(f"{ratio:.2f}x", style="bold red" if ratio < 1 else "green") if ratio is not None else "-",) \
            if with_base else ()
        table.add_row(_data(m.instance, 80), _data(m.job, 60), Text(state, style="bold red" if m.up is False else ""),
                      accept,
                      _num(m.accept_rate, ".2f"), _num(m.gen_tokens_per_s, ".1f"), *base, _num(m.running, "d"),
                      _num(m.queued, "d"), "yes" if m.speculative else "no",
                      _data(top.title if top else "ok", 120, style))
        for d in entry.diagnoses:
            notes.append(_data(f"{d.severity}: {d.message}", None, _STYLE.get(d.severity, "")))
    sel = f" {{{snapshot.selector}}}" if snapshot.selector else ""
    stamp = time.strftime("%H:%M:%S", time.localtime(snapshot.taken_at))
    header = _data(f"{len(snapshot.entries)} SGLang instance(s) at {snapshot.prometheus}{sel}, worst first, {stamp}",
                   None, "bold")
    return Group(header, table), ([Text("")] + notes if notes else [])
