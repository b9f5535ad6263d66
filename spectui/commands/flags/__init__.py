"""`spectui flags [--sglang-version V] [--host TARGET] [--model-arch ARCH] [--json] [--file F] -- COMMAND...`:
pre-flight.

Parses the launch command as pasted, resolves it the way that SGLang release would, and shows requested
vs effective values with every difference explained. Reading `<model-path>/config.json` (for the target
architecture) is the only I/O; core stays pure. `--host TARGET` judges the command with that host's own
SGLang (data/dump_flags.py run with the command's python, else python3 on PATH; cached per host and
version) when spectui does not ship the release exactly.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("--sglang-version", metavar="V", help="SGLang release (default: the newest bundled)")
    parser.add_argument("--model-arch", metavar="ARCH",
                        help="target architecture, e.g. LlamaForCausalLM (default: <model-path>/config.json)")
    parser.add_argument("--device", default="cuda", help="device SGLang runs on when the command has no --device "
                        "(default: cuda)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (CONTRACTS.md)")
    parser.add_argument("--file", metavar="F", help="read the launch command from a file (- for stdin)")
    parser.add_argument("--host", metavar="TARGET",
                        help="judge the command with this host's own SGLang flags (local or [user@]host[:port]) when "
                             "spectui does not ship that release: read once per host and version, cached")
    add_ssh_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                        help="the launch command, as words or as one quoted string")


def run(args: argparse.Namespace) -> int:
    from spectui.commands.flags.report import FlagsInputError, build_report, render_human
    from spectui.errors import SpectuiError

    try:
        text = _command_text(args)
        catalogue = _host_catalogue(args, text) if args.host else None
        report = build_report(text, version=args.sglang_version, model_arch=args.model_arch, device=args.device,
                              catalogue=catalogue)
    except SpectuiError as exc:
        print(f"spectui flags: {exc}", file=sys.stderr)
        return exc.exit_code
    except FlagsInputError as exc:
        print(f"spectui flags: {exc}", file=sys.stderr)
        return 2
    if args.json:
        from spectui.core.text import json_text  # values from a host are data: escaped, never raw

        sys.stdout.write(json_text(report.to_json()) + "\n")
    else:
        sys.stdout.write(render_human(report))
    # The exit code follows the verdict: 1 when SGLang fails (argparse, resolution, or start-up as predicted),
    # 0 when it starts (`overridden` included: it starts, with the overrides reported).
    return 0 if report.resolution.verdict in ("ok", "overridden") else 1


def _host_catalogue(args: argparse.Namespace, text: Any) -> Any:
    """(catalogue, pick) from `--host`: the command's own python when it names one, else python3 there."""
    import asyncio

    from spectui.commands.flags.report import FlagsInputError
    from spectui.core.launch import parse_pasted
    from spectui.errors import CommandParseError, UsageError
    from spectui.sources.hostflags_run import FALLBACK_PYTHON, host_catalogue
    from spectui.sources.target import open_host, parse_target

    try:
        cmd, assumed = parse_pasted(text)
    except CommandParseError as exc:
        raise FlagsInputError(str(exc)) from None
    target = parse_target(args.host)
    if target.kind not in ("local", "ssh"):
        raise UsageError(f"--host is a host (local or [user@]host[:port]), not {args.host!r}")
    exe = cmd.program[0] if cmd.program else ""
    python = exe if not assumed and exe.rsplit("/", 1)[-1].startswith("python") else FALLBACK_PYTHON

    async def read() -> Any:
        host = open_host(target, args, read_only=True)
        if target.kind == "ssh":
            await host.connect()
        try:
            return await host_catalogue(host, args.sglang_version, python=python, env=dict(cmd.env))
        finally:
            await host.close()

    return asyncio.run(read())


def _command_text(args: argparse.Namespace) -> Any:
    from spectui.commands.flags.report import FlagsInputError

    words = list(args.command or [])
    if words and words[0] == "--":
        words = words[1:]
    if args.file:
        if words:
            raise FlagsInputError("give the command either after -- or with --file, not both")
        try:
            if args.file == "-":
                return sys.stdin.read()
            with open(args.file, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError as exc:
            raise FlagsInputError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    if not words:
        raise FlagsInputError("no launch command given; usage: spectui flags -- python -m sglang.launch_server ...")
    return words
