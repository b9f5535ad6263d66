"""Ten servers in tabs against one: key latency while every tab's log streams in, and idle CPU on quiet logs.

    python3 perf/perf_tabs.py [--seconds S] [--tabs N] [--rate LINES_PER_S_PER_TAB]

Same method as perf/perf_ui.py (headless run_test, the real pipeline, rules and LogTail; a key's latency
is from the key event entering the app to the screen refreshed after its action ran), measured for one
tab and for N tabs in the same run, and printed as ratios. Every tab streams at the same rate, so N tabs
parse N times the lines (printed, with the lines still waiting to be parsed at the end: a hidden tab parses
once a second, so up to about a second of its lines may wait); only the shown tab is painted.
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

from perf_ui import LINES, cpu_seconds, measure_keys, stream  # noqa: E402


def _app(sessions):
    from spectui.ui.multi.app import TabbedApp, TabSpec

    return TabbedApp([TabSpec(s.label, s) for s in sessions])


async def key_latency(tabs: int, rate: int, seconds: float) -> tuple[list[float], int, int]:

    from spectui.ui.session import Session

    sessions = [Session(label=f"gpu{i}", log_path="bench.log", tail_factory=stream(rate), probe_gpus=False)
                for i in range(tabs)]
    app = _app(sessions)

    def counts(app):  # type: ignore[no-untyped-def]
        lines = sum(t.dashboard.query_one("LogView").last_line_no for t in app.tabs)
        waiting = sum(t.dashboard._pending_count for t in app.tabs)  # received, not parsed yet
        return lines, waiting

    # every tab has started and read its first lines before the first key
    samples, (lines, waiting), _dash = await measure_keys(app, seconds, settle=2.0, inside=counts)
    return samples, lines, waiting


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
        await pilot.pause(1.5)
        c0, t0 = cpu_seconds(), time.perf_counter()
        await asyncio.sleep(seconds)
        return (cpu_seconds() - c0) / (time.perf_counter() - t0)


def summary(name: str, ms: list[float]) -> tuple[float, float]:
    p50 = statistics.median(ms)
    p95 = sorted(ms)[int(0.95 * (len(ms) - 1))]
    print(f"  {name}: {len(ms)} presses, median {p50:.1f} ms, p95 {p95:.1f} ms, max {max(ms):.1f} ms")
    return p50, p95


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--rate", type=int, default=500, help="log lines/s per tab (default 500)")
    args = parser.parse_args()
    n = args.tabs
    print(f"key latency (space), headless 160x48, {args.rate} lines/s into every tab, {args.seconds:.0f}s each")
    one, lines1, wait1 = asyncio.run(key_latency(1, args.rate, args.seconds))
    many, lines_n, wait_n = asyncio.run(key_latency(n, args.rate, args.seconds))
    m1, p1 = summary(" 1 tab ", one)
    mn, pn = summary(f"{n:2d} tabs", many)
    print(f"  lines parsed: 1 tab {lines1:,}, {n} tabs {lines_n:,} ({lines_n / max(1, lines1):.1f}x);"
          f" received, not yet parsed at the end: {wait1:,} / {wait_n:,}")
    print(f"  ratio {n} tabs / 1 tab: median {mn / m1:.2f}x, p95 {pn / p1:.2f}x")
    print("tab switch (]), quiet logs")
    summary(f"{n:2d} tabs", asyncio.run(switch_latency(n)))
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(n):
            path = os.path.join(tmp, f"server{i}.log")
            Path(path).write_text("\n".join(LINES[:50]) + "\n")
            paths.append(path)
        print(f"idle CPU while following quiet logs ({args.seconds:.0f}s)")
        c1 = asyncio.run(idle_cpu(paths[:1], args.seconds))
        cn = asyncio.run(idle_cpu(paths, args.seconds))
        print(f"   1 tab : {c1 * 100:.2f}% of a core")
        print(f"  {n:2d} tabs: {cn * 100:.2f}% of a core (ratio {cn / c1:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
