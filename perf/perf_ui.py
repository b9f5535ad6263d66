"""Cockpit responsiveness: key latency while a 5k lines/s log streams in, and idle CPU on a quiet log.

    python3 perf/perf_ui.py [--seconds S]

Prints figures and ratios against baselines measured in the same run (no traffic; `tail -F` on the same
quiet file). The app runs headless (Textual's run_test), with the real pipeline, rules and LogTail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The line mix a busy server writes: a recorded simulator run (Prefill/Decode/HTTP lines in SGLang's
# formats), cycled. tests/ui/data/silent-override-sim.log, header lines skipped.
LINES = tuple(
    ln for ln in (ROOT / "tests/ui/data/silent-override-sim.log").read_text().splitlines() if not ln.startswith("# ")
)


def stream(rate: int):
    from spectui.sources.base import ConnState, TailLines, TailState

    async def events(_path: str):
        yield TailState(ConnState.CONNECTED, "bench")
        n, start = 1, time.perf_counter()
        while True:
            await asyncio.sleep(0.02)  # a tail reads about 50 times a second
            due = int((time.perf_counter() - start) * rate) + 1 - n  # paced by the clock, not by sleeps
            if due > 0:
                yield TailLines(tuple(LINES[(n + i) % len(LINES)] for i in range(due)), n, 0)
                n += due

    return events


async def measure_keys(app, seconds: float, settle: float = 0.5,  # type: ignore[no-untyped-def]
                       inside=None) -> tuple[list[float], int, object]:
    """Press space (pause/resume) every 50 ms for `seconds`: ms from the key entering the app to the screen
    having been refreshed after its action ran. Returns (samples, lines the log view holds, the dashboard);
    with `inside`, its result on the app (still running) instead of the line count."""
    from textual import events

    samples: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        dash = app.dashboard
        original = dash.action_toggle_follow
        answered = asyncio.Event()

        def toggled() -> None:
            original()
            dash.call_after_refresh(answered.set)  # answered = handled and repainted

        dash.action_toggle_follow = toggled  # type: ignore[method-assign]
        await pilot.pause(settle)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            answered.clear()
            key = events.Key("space", " ")
            key.set_sender(app)
            t0 = time.perf_counter()
            app._driver.send_message(key)
            await answered.wait()
            samples.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.05)
        lines = inside(app) if inside is not None else dash.query_one("LogView").last_line_no
    return samples, lines, dash


async def key_latency(rate: int, seconds: float) -> list[float]:
    """ms from a key event entering the app to the screen having been refreshed after its action ran."""
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    session = Session(label="bench", log_path="bench.log" if rate else None,
                      tail_factory=stream(rate) if rate else None, probe_gpus=False)
    app = SpectuiApp(session)
    samples, lines, _dash = await measure_keys(app, seconds)
    if rate:
        print(f"  lines received in {seconds:.0f}s: {lines:,} ({lines / seconds:,.0f}/s)")
    return samples


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def idle_cpu(path: str | None, seconds: float) -> float:
    from spectui.sources.local import LocalHost
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    app = SpectuiApp(Session(label="bench", log_path=path, host=LocalHost(), probe_gpus=False))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.0)
        c0, t0 = cpu_seconds(), time.perf_counter()
        await asyncio.sleep(seconds)
        return (cpu_seconds() - c0) / (time.perf_counter() - t0)


def tail_cpu(path: str, seconds: float) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(["tail", "-F", path], stdout=subprocess.DEVNULL)
    time.sleep(seconds)
    proc.terminate()
    proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)) / seconds


def summary(name: str, ms: list[float]) -> float:
    p50 = statistics.median(ms)
    p95 = sorted(ms)[int(0.95 * (len(ms) - 1))]
    print(f"  {name}: {len(ms)} key presses, median {p50:.1f} ms, p95 {p95:.1f} ms, max {max(ms):.1f} ms")
    return p50


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate", type=int, default=5000)
    args = parser.parse_args()
    print(f"key latency (space = pause/resume), headless 160x48, {args.seconds:.0f}s each")
    quiet = summary("no log traffic      ", asyncio.run(key_latency(0, args.seconds)))
    busy = summary(f"{args.rate} lines/s stream", asyncio.run(key_latency(args.rate, args.seconds)))
    print(f"  ratio busy/quiet median: {busy / quiet:.2f}x")
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write("\n".join(LINES[:50]) + "\n")
        path = fh.name
    try:
        print(f"idle CPU while following a quiet log ({args.seconds:.0f}s)")
        ours = asyncio.run(idle_cpu(path, args.seconds))
        empty = asyncio.run(idle_cpu(None, args.seconds))
        base = tail_cpu(path, args.seconds)
        print(f"  spectui cockpit following it: {ours * 100:.2f}% of a core")
        print(f"  the same screen with no log:  {empty * 100:.2f}% of a core (Textual + the 1 Hz header)")
        print(f"  tail -F on the same file:     {base * 100:.2f}% of a core")
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
