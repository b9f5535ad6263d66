"""`spectui record TARGET -o FILE [--duration S] [--log-bytes N]`: one incident bundle (docs/BUNDLE.md).

The work is `spectui.ops.recorder.collect` (also behind `report TARGET` and the cockpit's `x`); the
bundle writer masks every secret. Output: one summary line on stderr, the bundle at FILE."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_record_arguments(parser)
    parser.add_argument("-o", "--output", metavar="FILE", required=True,
                        help="the bundle to write (suggested: NAME.spectui.tar.gz)")


def add_record_arguments(parser: argparse.ArgumentParser, *, duration: float = 10.0) -> None:
    """TARGET and the recording options (shared with `spectui report TARGET`)."""
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("target", metavar="TARGET",
                        help="local, [user@]host[:port], [user@]host[:port]:/path/to/log, or /path/to/log")
    parser.add_argument("--duration", type=float, default=duration, metavar="S",
                        help=f"seconds of /server_info, /metrics and GPU samples (default {duration:g})")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples (default 1)")
    parser.add_argument("--log-bytes", type=_size, default=None, metavar="N",
                        help="byte budget of the log in the bundle (default 8 MiB; 512K, 16M accepted)")
    parser.add_argument("--pid", type=int, metavar="PID", help="which SGLang server, when the host runs several")
    parser.add_argument("--server-port", type=int, metavar="N", help="the server's HTTP port (default: discovered)")
    parser.add_argument("--baseline-tps", type=float, metavar="TPS",
                        help="decode tok/s without speculation (for the slower-than-baseline rule)")
    add_ssh_options(parser)


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        n = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 8388608, 512K, 16M)") from None
    if n < 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: the log budget must be at least 1024 bytes")
    return n


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    try:
        return asyncio.run(_run(args))
    except SpectuiError as exc:
        print(f"spectui record: {exc}", file=sys.stderr)
        return exc.exit_code


async def record_target(args: argparse.Namespace, *, say: Any = None) -> Any:
    """Connect to TARGET and collect (ops.recorder.Recording). Raises SpectuiError with one line."""
    import os

    from spectui.bundle.logcut import DEFAULT_LOG_BUDGET
    from spectui.errors import UsageError
    from spectui.ops.recorder import RecordOptions, collect
    from spectui.sources.target import open_host, parse_target

    target = parse_target(args.target)
    if target.kind == "stdin":
        raise UsageError("record needs a host or a log file, not stdin: spectui record local -o FILE")
    for name in ("duration", "interval"):
        if getattr(args, name) < 0 or (name == "interval" and args.interval == 0):
            raise UsageError(f"--{name} must be > 0" if name == "interval" else f"--{name} must be >= 0")
    log_path = target.path
    if log_path and target.kind != "ssh":
        log_path = os.path.abspath(os.path.expanduser(log_path))
        from spectui.commands.check.sniff import log_file_problem
        from spectui.errors import InputError

        problem = log_file_problem(log_path, target.path, text_too=target.kind == "file")
        if problem:  # binary data or no SGLang line: one line, exit 2, nothing recorded
            raise InputError(problem)
    opts = RecordOptions(duration=args.duration, interval=args.interval,
                         log_bytes=args.log_bytes or DEFAULT_LOG_BUDGET, pid=args.pid,
                         server_port=args.server_port, baseline_tps=args.baseline_tps)
    host = open_host(target, args, read_only=True)
    try:
        if target.is_remote:
            from spectui.commands.connect import connect_with_retry

            await connect_with_retry(host)
        shown = target.display() if target.kind != "file" else log_path
        if target.kind != "file" and log_path is None and args.pid is None:
            from spectui.sources.target import pick_one

            # one way to name the server: --server-port picks it; several and none named: listed
            opts.pid = (await pick_one(host, None, args.server_port)).pid
        return await collect(host, log_path=log_path, target=shown, opts=opts, say=say)
    finally:
        await host.close()


async def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from spectui.bundle import write_bundle
    from spectui.errors import UsageError

    out = Path(args.output)
    if out.is_dir():
        raise UsageError(f"-o {out} is a directory; give a file name such as {out}/incident.spectui.tar.gz")
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: folder {out.parent} does not exist")
    rec = await record_target(args, say=lambda text: print(f"spectui record: {text}", file=sys.stderr, flush=True))
    manifest = write_bundle(out, rec.parts)
    for note in rec.notes:
        print(f"spectui record: note: {note}", file=sys.stderr)
    print(f"spectui record: {summary(out, manifest, rec)}", file=sys.stderr)
    return 0


def summary(path: Any, manifest: Any, rec: Any) -> str:
    """One line: where, how big, what is in it, which secrets were masked."""
    import os

    parts = rec.parts
    log = manifest.log or {}
    masked = ", ".join(manifest.masked_names) or "none found"
    who = f"pid {rec.server.pid}" if rec.server else "log only"
    return (f"wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB): {who}, log {log.get('bytes', 0)} bytes"
            f"{' (cut)' if log.get('cut') else ''}, {len(parts.server_info)} server_info + {len(parts.metrics)} "
            f"metrics snapshots, {len(parts.series)} decode samples, {len(parts.diagnoses)} diagnoses, "
            f"SGLang {parts.sglang_version or 'unknown'}; secrets masked: {masked}")
