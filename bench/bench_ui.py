"""Cockpit responsiveness: key latency while a 5k lines/s log streams in, and idle CPU on a quiet log.

    python3 bench/bench_ui.py [--seconds S]

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
# A real decode line (https://github.com/sgl-project/SpecForge/pull/269, tests/data/corpus/051) and an
# HTTP access line from the same log: the mix a busy server writes.
LINES = (
    "[2025-11-04 08:41:02] Decode batch. #running-req: 1, #token: 112, token usage: 0.00, accept len: 2.19, "
    "cuda graph: True, gen throughput (token/s): 258.07, #queue-req: 0, ",
    '[2025-11-04 08:41:02] INFO:     127.0.0.1:48648 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
)


def stream(rate: int):
    from spectui.sources.base import ConnState, TailLines, TailState

    async def events(_path: str):
        yield TailState(ConnState.CONNECTED, "bench")
        n, step, tick = 1, max(1, rate // 50), 1 / 50  # 50 batches a second, like a tail's reads
        while True:
            batch = tuple(LINES[i % 2] for i in range(step))
            yield TailLines(batch, n, 0)
            n += step
            await asyncio.sleep(tick)

    return events


async def key_latency(rate: int, seconds: float) -> list[float]:
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    session = Session(label="bench", log_path="bench.log", tail_factory=stream(rate) if rate else None,
                      probe_gpus=False)
    if not rate:
        session.log_path = None
    app = SpectuiApp(session)
    samples: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            await pilot.press("space")  # returns once the key has been handled and the screen updated
            samples.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.05)
        lines = app.dashboard.query_one("LogView").last_line_no
    if rate:
        print(f"  lines received in {seconds:.0f}s: {lines:,}")
    return samples


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def idle_cpu(path: str, seconds: float) -> float:
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
        fh.write("\n".join(LINES) + "\n")
        path = fh.name
    try:
        print(f"idle CPU while following a quiet log ({args.seconds:.0f}s)")
        ours = asyncio.run(idle_cpu(path, args.seconds))
        base = tail_cpu(path, args.seconds)
        print(f"  spectui cockpit: {ours * 100:.2f}% of a core;  tail -F: {base * 100:.2f}% of a core")
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
