"""`spectui demo`: start the simulated SGLang server on a free port and follow it like a real one (target `local`).

The simulator runs in its own session (process group); whatever ends the demo — --duration, Ctrl-C,
SIGTERM, the simulator exiting — that group gets SIGTERM, then SIGKILL after a grace period, so
nothing is left behind. The log goes to a temp file removed at exit (with the logs of servers relaunched
from it), unless --log names one or --keep-log keeps it (then its path is said at exit), so
`spectui check` can be run on it. `--headless` exits 1 when an error-severity diagnosis was printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.sim.scenarios import SCENARIOS

    parser.add_argument("--scenario", default="healthy", choices=list(SCENARIOS),
                        help="what the simulated server does (default: healthy)")
    parser.add_argument("--headless", action="store_true", help="no screen: print watch-style JSONL events")
    parser.add_argument("--jsonl", action="store_true", help="print events as JSON lines (implied by --headless)")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until Ctrl-C)")
    parser.add_argument("--sglang-version", metavar="V", help="SGLang release to emulate (default: newest bundled)")
    parser.add_argument("--time-scale", type=float, default=4.0, metavar="X",
                        help="run the simulated server X times faster than real time (default 4)")
    parser.add_argument("--log", metavar="FILE",
                        help="write the simulated server's log here and keep it (default: a temp file, removed at exit)")
    parser.add_argument("--keep-log", action="store_true", help="keep the temp log at exit (its path is printed)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")


def run(args: argparse.Namespace) -> int:
    from spectui.sim.scenarios import SCENARIOS

    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.name:16} {s.summary}")
        return 0
    if args.duration is not None and args.duration <= 0:
        print("spectui demo: error: --duration must be > 0 seconds", file=sys.stderr)
        return 2
    if args.time_scale <= 0:
        print("spectui demo: error: --time-scale must be > 0", file=sys.stderr)
        return 2
    own_log = args.log is None
    keep = bool(getattr(args, "keep_log", False))
    if own_log:  # the demo's own temp file: removed at exit unless --keep-log
        fd, args.log = tempfile.mkstemp(prefix=f"spectui-demo-{args.scenario}-", suffix=".log")
        os.close(fd)
    try:
        return _run(args)
    finally:
        if own_log and not keep:
            remove_demo_logs(args.log)
        else:
            print(f"spectui demo: log kept at {args.log}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.sim.scenarios import SCENARIOS

    if not args.headless:
        from spectui.commands.connect import run_demo

        return run_demo(args)
    from spectui.commands.demo.simrun import DemoRun

    demo = DemoRun(SCENARIOS[args.scenario], version=args.sglang_version, time_scale=args.time_scale,
                   duration=args.duration, log_path=args.log)
    try:
        return asyncio.run(demo.run())
    except KeyboardInterrupt:
        return 130
    finally:
        demo.stop_sim()


def remove_demo_logs(path: str) -> None:
    """Remove the demo's temp log and the logs a relaunch from the cockpit wrote beside it (ops.relaunch.plan names
    them after it: NAME-YYYYMMDD-HHMMSS[-N].log). Nothing else is touched."""
    folder, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    stamped = re.compile(re.escape(stem) + r"-\d{8}-\d{6}(?:-\d+)?" + re.escape(ext))
    with contextlib.suppress(OSError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        for other in os.listdir(folder or "."):
            if stamped.fullmatch(other):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, other))
