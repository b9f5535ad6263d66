"""`spectui watch TARGET [--jsonl] [--raw] [--from-start] [--duration S]`: headless live follow."""

from __future__ import annotations

import argparse
import sys

from spectui.commands.sshopts import add_ssh_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET",
                        help="local | [user@]host[:port] | [user@]host[:port]:/path/to/log | /path/to/log | -")
    parser.add_argument("--jsonl", action="store_true", help="one JSON event a line, flushed as it happens")
    parser.add_argument("--raw", action="store_true", help="also print every log line (type line)")
    parser.add_argument("--from-start", action="store_true", help="read the log from its first line")
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    parser.add_argument("--pid", type=int, help="which SGLang server, when the host runs several")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server listening on port N (when the host runs several)")
    parser.add_argument("--backfill", type=int, default=50, metavar="N",
                        help="lines of context read on attach (default 50; ignored with --from-start)")
    parser.add_argument("--baseline-tps", metavar="TPS", type=float,
                        help="decode tok/s of this server without speculation (for the slower-than-baseline rule)")
    parser.add_argument("--inspect", action="store_true",
                        help="inspect the server's draft checkpoint on its host, for the DRAFT rules")
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.commands.watch.loop import watch_main
    from spectui.errors import SpectuiError

    if args.duration is not None and args.duration <= 0:
        print("spectui watch: error: --duration must be > 0 seconds", file=sys.stderr)
        return 2
    if args.backfill < 0:
        print("spectui watch: error: --backfill must be >= 0", file=sys.stderr)
        return 2
    if args.baseline_tps is not None and not args.baseline_tps > 0:
        print("spectui watch: error: --baseline-tps must be > 0 tok/s", file=sys.stderr)
        return 2
    try:
        from spectui.commands.check.sniff import refuse_binary_target

        refuse_binary_target(args.target)  # binary data: one line, exit 2 (a text file is followed as it grows)
        return asyncio.run(watch_main(args))
    except SpectuiError as exc:
        print(f"spectui watch: {exc}", file=sys.stderr)  # several servers: the message lists them
        return exc.exit_code
