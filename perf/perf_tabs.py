"""Ten servers in tabs against one: key latency while every tab's log streams in, and idle CPU on quiet logs.

    python3 perf/perf_tabs.py [--runs R] [--seconds S] [--idle-seconds S] [--tabs N] [--rate LINES_PER_S_PER_TAB]

Same method as perf/perf_ui.py (headless run_test, the real pipeline, rules and LogTail; a key's latency
is from the key event entering the app to the screen refreshed after its action ran), measured for one
tab and for N tabs in the same run, and printed as ratios. Every tab streams at the same rate, so N tabs
parse N times the lines (printed, with the lines still waiting to be parsed at the end: a hidden tab parses
once a second, so up to about a second of its lines may wait); only the shown tab is painted. The hidden
tabs' parse slices are counted (how many, the longest: what a key can wait for behind them).

Idle CPU is measured once the tabs have settled (IDLE_SETTLE s after start: the first reads, the idle
flush a second after the last line and the first background round are start-up, not idle work) over
`--idle-seconds` (default 20 s: the figures are a few ms of CPU a second, and periodic checks run every
5 s). With `--runs R` the whole comparison is repeated R times and the median of the runs is printed.

What the tabs cost the server (perf/perf_probe.py's method, `--probe-seconds`, 0 to skip): a real idle
simulator attached as `connect local --pid` attaches it, by 1 tab and by N tabs of that server; the
requests a second it logs in its access log (uvicorn's lines), and the cockpit's CPU meanwhile (its
liveness, idle /metrics and GPU workers running). The machine's load (`uptime`) is printed before and
after; the closing lines give the ratios against the goals (#29: keys p95 <= 1.3x, idle CPU <= 2x, at
most 1 request a second).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_probe import Calls  # noqa: E402
from perf_ui import LINES, cpu_seconds, measure_keys, stream  # noqa: E402

CALLS = Calls()  # the host commands and process-state reads of the server-cost part


def _app(sessions):
    from spectui.ui.multi.app import TabbedApp, TabSpec

    return TabbedApp([TabSpec(s.label, s) for s in sessions])


IDLE_SETTLE = 3.0  # seconds before an idle window opens


async def key_latency(tabs: int, rate: int, seconds: float) -> tuple[list[float], int, int, tuple[int, int, float]]:

    from spectui.ui.session import Session

    sessions = [Session(label=f"gpu{i}", log_path="bench.log", tail_factory=stream(rate), probe_gpus=False)
                for i in range(tabs)]
    app = _app(sessions)

    def counts(app):  # type: ignore[no-untyped-def]
        lines = sum(t.dashboard.query_one("LogView").last_line_no for t in app.tabs)
        waiting = sum(t.dashboard._pending_count for t in app.tabs)  # received, not parsed yet
        slicer = getattr(app.background, "slicer", None)  # (None before the hidden tabs' parse was sliced)
        return lines, waiting, (slicer.slices, slicer.over, slicer.longest) if slicer is not None else (0, 0, 0.0)

    # every tab has started and read its first lines before the first key
    samples, (lines, waiting, slices), _dash = await measure_keys(app, seconds, settle=2.0, inside=counts)
    return samples, lines, waiting, slices


async def switch_latency(tabs: int, rounds: int = 30) -> list[float]:
    """ms from `]` to the next tab painted (quiet logs)."""
    from textual import events

    from spectui.ui.session import Session

    app = _app([Session(label=f"gpu{i}", log_path=None, probe_gpus=False) for i in range(tabs)])
    out: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        for _ in range(rounds):
            before = app.active
            key = events.Key("right_square_bracket", "]")
            key.set_sender(app)
            t0 = time.perf_counter()
            app._driver.send_message(key)
            while app.active == before:
                await asyncio.sleep(0.001)
            done = asyncio.Event()
            app.screen.call_after_refresh(done.set)
            await done.wait()
            out.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.03)
    return out


async def idle_cpu(paths: list[str], seconds: float) -> float:
    from spectui.sources.local import LocalHost
    from spectui.ui.session import Session

    host = LocalHost()
    app = _app([Session(label=f"gpu{i}", log_path=p, host=host, probe_gpus=False) for i, p in enumerate(paths)])
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(IDLE_SETTLE)
        c0, t0 = cpu_seconds(), time.perf_counter()
        await asyncio.sleep(seconds)
        return (cpu_seconds() - c0) / (time.perf_counter() - t0)


def summary(name: str, ms: list[float]) -> tuple[float, float]:
    p50 = statistics.median(ms)
    p95 = sorted(ms)[int(0.95 * (len(ms) - 1))]
    print(f"  {name}: {len(ms)} presses, median {p50:.1f} ms, p95 {p95:.1f} ms, max {max(ms):.1f} ms")
    return p50, p95


def one_run(args: argparse.Namespace, paths: list[str]) -> dict[str, float]:
    n = args.tabs
    print(f"key latency (space), headless 160x48, {args.rate} lines/s into every tab, {args.seconds:.0f}s each")
    one, lines1, wait1, _ = asyncio.run(key_latency(1, args.rate, args.seconds))
    many, lines_n, wait_n, (slices, over, longest) = asyncio.run(key_latency(n, args.rate, args.seconds))
    m1, p1 = summary(" 1 tab ", one)
    mn, pn = summary(f"{n:2d} tabs", many)
    print(f"  lines parsed: 1 tab {lines1:,}, {n} tabs {lines_n:,} ({lines_n / max(1, lines1):.1f}x);"
          f" received, not yet parsed at the end: {wait1:,} / {wait_n:,}")
    print(f"  hidden tabs' parse: {slices:,} slices on the event loop, {over:,} over twice the budget,"
          f" the longest {longest * 1000:.1f} ms")
    print(f"  ratio {n} tabs / 1 tab: median {mn / m1:.2f}x, p95 {pn / p1:.2f}x")
    print("tab switch (]), quiet logs")
    sw, _ = summary(f"{n:2d} tabs", asyncio.run(switch_latency(n)))
    print(f"idle CPU while following quiet logs ({args.idle_seconds:.0f}s, after {IDLE_SETTLE:.0f}s settling)")
    c1 = asyncio.run(idle_cpu(paths[:1], args.idle_seconds))
    cn = asyncio.run(idle_cpu(paths, args.idle_seconds))
    print(f"   1 tab : {c1 * 100:.2f}% of a core")
    print(f"  {n:2d} tabs: {cn * 100:.2f}% of a core (ratio {cn / c1:.2f}x)")
    row = {"m1": m1, "mn": mn, "p1": p1, "pn": pn, "median": mn / m1, "p95": pn / p1, "switch": sw,
           "c1": c1 * 100, "cn": cn * 100, "cpu": cn / c1, "waiting": wait_n}
    if args.probe_seconds > 0:
        row.update(server_cost(n, args.probe_seconds))
    return row


def server_cost(n: int, seconds: float) -> dict[str, float]:
    """Requests/s an idle simulator gets from 1 tab and from n tabs of it (perf_probe.py), and the CPU."""
    import contextlib
    import signal

    from perf_probe import measure, show, start_sim

    from spectui.commands.demo.simrun import free_port

    print(f"what the tabs cost an idle server ({seconds:.0f}s windows, counted in its access log)")
    with tempfile.TemporaryDirectory() as tmp:
        root, port = Path(tmp), free_port()
        pid = start_sim(root, port, 0.0)
        try:
            one = asyncio.run(measure(port, pid, root / "server.log", 1, 5.0, seconds, CALLS))
            show(" 1 tab ", one)
            many = asyncio.run(measure(port, pid, root / "server.log", n, 5.0, seconds, CALLS))
            show(f"{n:2d} tabs", many)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    return {"rq1": one["total"], "rqn": many["total"], "sc1": one["cpu"] * 100, "scn": many["cpu"] * 100}


def uptime() -> str:
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def goals(rows: list[dict[str, float]], n: int) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    print(f"---- against #29's goals ({n} tabs vs 1, median of {len(rows)} run(s))")
    print(f"  key p95 ratio {med('p95'):.2f}x (goal <= 1.3x); idle CPU ratio {med('cpu'):.2f}x (goal <= 2x)")
    if "rq1" in rows[0]:
        print(f"  requests/s to an idle server: 1 tab {med('rq1'):.2f}, {n} tabs {med('rqn'):.2f} (goal <= 1);"
              f" cockpit CPU attached to it: {med('sc1'):.2f}% vs {med('scn'):.2f}%"
              f" ({med('scn') / max(1e-9, med('sc1')):.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1, help="repeat the comparison; the median is printed")
    parser.add_argument("--seconds", type=float, default=8.0, help="key presses for this long, per app")
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="idle CPU window, per app")
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--rate", type=int, default=500, help="log lines/s per tab (default 500)")
    parser.add_argument("--probe-seconds", type=float, default=20.0,
                        help="window counting the requests an idle simulator gets (0: skip)")
    args = parser.parse_args()
    n = args.tabs
    CALLS.install()
    print(f"uptime: {uptime()}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(n):
            path = os.path.join(tmp, f"server{i}.log")
            Path(path).write_text("\n".join(LINES[:50]) + "\n")
            paths.append(path)
        rows = []
        for run in range(args.runs):
            if args.runs > 1:
                print(f"---- run {run + 1} of {args.runs} (load average {os.getloadavg()[0]:.1f})")
            rows.append(one_run(args, paths))
    if args.runs > 1:
        def med(key: str) -> float:
            return statistics.median(r[key] for r in rows)

        def runs(key: str) -> str:
            return ", ".join(f"{r[key]:.2f}" for r in rows)

        print(f"---- median of {args.runs} runs ({n} tabs vs 1, each run compared within itself)")
        print(f"  key latency median: {med('m1'):.1f} ms vs {med('mn'):.1f} ms; ratio {med('median'):.2f}x"
              f"  (runs: {runs('median')})")
        print(f"  key latency p95:    {med('p1'):.1f} ms vs {med('pn'):.1f} ms; ratio {med('p95'):.2f}x"
              f"  (runs: {runs('p95')})")
        print(f"  idle CPU:           {med('c1'):.2f}% vs {med('cn'):.2f}%; ratio {med('cpu'):.2f}x"
              f"  (runs: {runs('cpu')})")
        print(f"  tab switch median {med('switch'):.1f} ms; lines waiting at the end (10 tabs) {med('waiting'):,.0f}")
    goals(rows, n)
    print(f"uptime: {uptime()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
