"""Replay calm: key latency in the cockpit while an incident bundle replays at --speed 50, against the live
figure (perf_ui's paced 5k lines/s stream) and no traffic, all measured in the same run.

    python3 perf/perf_replay.py [--seconds S] [--speed X] [--log-rate N]

The bundle is written with spectui.bundle from the recorded simulator log (tests/ui/data), re-stamped at
N lines per second of log time, so at speed X the replay delivers N*X lines/s (default 100*50 = 5000, the
live stream's rate). The app runs headless (Textual's run_test) with the real pipeline and rules.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_ui import LINES, key_latency, measure_keys, summary  # noqa: E402

_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ")


def stamped_log(total: int, per_second: int) -> str:
    """The start-up once (one launch: the writer keeps the current launch), then the serving lines cycled."""
    base = datetime(2025, 6, 1, 10, 0, 0, tzinfo=UTC).timestamp()
    serving = next(i for i, line in enumerate(LINES) if "Prefill batch" in line)
    cycle = LINES[serving:]
    out = []
    for i in range(total):
        line = LINES[i] if i < serving else cycle[(i - serving) % len(cycle)]
        t = datetime.fromtimestamp(base + i // per_second, UTC).strftime("%Y-%m-%d %H:%M:%S")
        out.append(_STAMP.sub(f"[{t}] ", line) if _STAMP.match(line) else line)
    return "\n".join(out) + "\n"


async def replay_latency(path: str, speed: float, seconds: float) -> list[float]:
    """perf_ui's key measurement, on a cockpit replaying the bundle (connect FILE --speed X)."""
    from spectui.ui.app import SpectuiApp
    from spectui.ui.bundle_replay import open_replay

    app = SpectuiApp(open_replay(path, speed=speed))
    samples, lines, dash = await measure_keys(app, seconds)
    print(f"  replay lines shown in {seconds:.0f}s: {lines:,} ({lines / (seconds + 0.5):,.0f}/s), "
          f"tail done: {dash.tail_done}")
    return samples


def main() -> int:
    from spectui.bundle import BundleParts, write_bundle

    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--speed", type=float, default=50.0)
    parser.add_argument("--log-rate", type=int, default=100, help="log lines per second of log time")
    args = parser.parse_args()
    live_rate = int(args.log_rate * args.speed)
    total = int(args.log_rate * args.speed * (args.seconds + 4))
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "perf.spectui.tar.gz")
        t0 = time.perf_counter()
        write_bundle(path, BundleParts(target="perf", sglang_version="0.5.23", log=stamped_log(total, args.log_rate),
                                       log_budget=64 << 20))
        print(f"bundle: {total:,} log lines written in {time.perf_counter() - t0:.1f}s")
        print(f"key latency (space = pause/resume), headless 160x48, {args.seconds:.0f}s each")
        quiet = summary("no log traffic            ", asyncio.run(key_latency(0, args.seconds)))
        live = summary(f"live {live_rate} lines/s stream ", asyncio.run(key_latency(live_rate, args.seconds)))
        replay = summary(f"replay at --speed {args.speed:g}    ", asyncio.run(replay_latency(path, args.speed, args.seconds)))
    print(f"  ratio replay/live median: {replay / live:.2f}x; replay/quiet: {replay / quiet:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
