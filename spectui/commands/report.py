"""`spectui report FILE|TARGET [--format md|json] [-o OUT]`: a GitHub-issue report from an incident bundle,
or from a live TARGET (recorded in memory, through the same masking writer, then reported)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.record import add_record_arguments

    add_record_arguments(parser, duration=3.0)
    parser.set_defaults(target=None)
    parser.add_argument("--format", choices=("md", "json"), default="md",
                        help="md: GitHub-issue Markdown (default); json: the contract object (CONTRACTS.md)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the report here (default: stdout)")


def bundle_path(text: str) -> str | None:
    """`text` when it names a local file that is (or claims to be) a bundle, else None."""
    from spectui.ui.bundle_replay import bundle_file

    return bundle_file(text)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    try:
        text = _from_bundle(args) if bundle_path(args.target) else asyncio.run(_from_target(args))
    except SpectuiError as exc:
        print(f"spectui report: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"spectui report: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"spectui report: wrote {args.output} ({len(text.encode())} bytes)", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _from_bundle(args: argparse.Namespace) -> str:
    from spectui.bundle import read_bundle, render_report

    return render_report(read_bundle(bundle_path(args.target) or args.target), format=args.format)


async def _from_target(args: argparse.Namespace) -> str:
    import os
    import tempfile

    from spectui.bundle import read_bundle, render_report, write_bundle
    from spectui.commands.record import record_target

    rec = await record_target(args, say=lambda text: print(f"spectui report: {text}", file=sys.stderr, flush=True))
    fd, tmp = tempfile.mkstemp(prefix="spectui-report-", suffix=".spectui.tar.gz")
    os.close(fd)
    try:
        write_bundle(tmp, rec.parts)  # the writer's masking, exactly as a recorded bundle gets it
        return render_report(read_bundle(tmp), format=args.format)
    finally:
        os.unlink(tmp)
