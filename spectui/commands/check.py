"""`spectui check PATH|- [--json]`: triage a whole SGLang log headlessly (parse, metrics, rules)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

CHUNK = 8 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="SGLang log file, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON object (CONTRACTS.md)")
    parser.add_argument("--launch", metavar="CMD", help="the launch command, when the log does not hold it")
    parser.add_argument("--sglang-version", metavar="V", help="SGLang release (default: guessed from the log)")
    parser.add_argument("--rules", metavar="DIR", action="append", default=[], help="extra rules directory")


def run(args: argparse.Namespace) -> int:
    from spectui.commands.checkrun import CheckInputError, check_stream, open_input

    try:
        stream, name = open_input(args.path)
    except CheckInputError as exc:
        print(f"spectui check: {exc}", file=sys.stderr)
        return 2
    try:
        engine = _build_engine(args)
        result = check_stream(stream, engine=engine)
    except CheckInputError as exc:
        print(f"spectui check: {name}: {exc}", file=sys.stderr)
        return 2
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if result.looks_binary:
        print(
            f"spectui check: {name} does not look like a text log (binary data, no SGLang lines found); "
            "give the server's log file",
            file=sys.stderr,
        )
        return 2
    if args.json:
        import json

        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    else:
        from spectui.commands.checkview import render

        render(result, name)
    return 1 if any(_severity(d) == "error" for d in result.diagnoses) else 0


def _severity(diagnosis: Any) -> str:
    return str(getattr(diagnosis, "severity", ""))


def _build_engine(args: argparse.Namespace) -> Any:
    """The rule engine for --launch/--sglang-version/--rules. Wired by the rules work; None until then."""
    return None
