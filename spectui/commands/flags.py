"""`spectui flags [--sglang-version V] [--model-arch ARCH] [--json] [--file F] -- COMMAND...`: pre-flight.

Parses the launch command as pasted, resolves it the way that SGLang release would, and shows requested
vs effective values with every difference explained. Reading `<model-path>/config.json` (for the target
architecture) is the only I/O; core stays pure.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sglang-version", metavar="V", help="SGLang release (default: the newest bundled)")
    parser.add_argument("--model-arch", metavar="ARCH",
                        help="target architecture, e.g. LlamaForCausalLM (default: <model-path>/config.json)")
    parser.add_argument("--device", default="cuda", help="device SGLang runs on when the command has no --device "
                        "(default: cuda)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (CONTRACTS.md)")
    parser.add_argument("--file", metavar="F", help="read the launch command from a file (- for stdin)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                        help="the launch command, as words or as one quoted string")


def run(args: argparse.Namespace) -> int:
    from spectui.commands.flagsreport import FlagsInputError, build_report, render_human

    try:
        report = build_report(
            _command_text(args), version=args.sglang_version, model_arch=args.model_arch, device=args.device)
    except FlagsInputError as exc:
        print(f"spectui flags: {exc}", file=sys.stderr)
        return 2
    if args.json:
        import json

        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_human(report))
    return 0 if report.resolution.outcome == "ok" else 1


def _command_text(args: argparse.Namespace) -> Any:
    from spectui.commands.flagsreport import FlagsInputError

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
