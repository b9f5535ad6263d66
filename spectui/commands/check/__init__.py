"""`spectui check PATH|- [--json]`: triage a whole SGLang log headlessly (parse, metrics, rules)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

CHUNK = 8 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="SGLang log file, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON object (CONTRACTS.md)")
    parser.add_argument("--launch", metavar="CMD", help="the launch command, when the log does not hold it")
    parser.add_argument("--sglang-version", metavar="V", help="SGLang release (default: guessed from the log)")
    parser.add_argument("--rules", metavar="DIR", action="append", default=[], help="extra rules directory")
    parser.add_argument("--baseline-tps", metavar="TPS", type=float,
                        help="decode tok/s of this server without speculation (for the slower-than-baseline rule)")
    parser.add_argument("--inspect", action="store_true",
                        help="inspect the draft checkpoint --launch names (on by itself when that path is a local folder)")


def run(args: argparse.Namespace) -> int:
    from spectui.commands.check.bundle import is_bundle_input, open_bundle, remap_lines
    from spectui.commands.check.scan import CheckInputError, check_stream, open_input
    from spectui.errors import InputError

    bundle = None
    given = args.sglang_version  # --sglang-version; a bundle fills it otherwise
    try:
        if is_bundle_input(args.path):  # an incident bundle: its log, launch command and SGLang version
            stream, name, bundle = open_bundle(args)
        else:
            stream, name = open_input(args.path)
    except (CheckInputError, InputError) as exc:
        print(f"spectui check: {exc}", file=sys.stderr)
        return 2
    try:
        engine = _build_engine(args)
        # SPECTUI_CHECK_PARALLEL=0: no worker process for big files (checkpar), e.g. on a busy shared host
        parallel = os.environ.get("SPECTUI_CHECK_PARALLEL", "1") != "0"
        result = check_stream(stream, engine=engine, parallel=parallel)
    except CheckInputError as exc:
        print(f"spectui check: {name}: {exc}", file=sys.stderr)
        return 2
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    from spectui.commands.check.sniff import binary_message, not_sglang_message

    if result.looks_binary:
        print(f"spectui check: {binary_message(name)}", file=sys.stderr)
        return 2
    if result.lines and not result.recognised:  # an nginx log, a pip log …: input error, not "diagnoses: none"
        print(f"spectui check: {not_sglang_message(name, result.lines)}", file=sys.stderr)
        return 2
    if bundle is not None:
        result = remap_lines(result, bundle)  # line numbers of the original log, not of the bundle's cut
    if args.json:
        from spectui.core.text import json_text  # log text is data: no raw escape/C1 reaches the pipe

        sys.stdout.write(json_text(result.to_json()) + "\n")
    else:
        from spectui.commands.check.view import render

        render(result, name, version=args.sglang_version, version_from="given" if given else "bundle")
    return 1 if any(_severity(d) == "error" for d in result.diagnoses) else 0


def _severity(diagnosis: Any) -> str:
    return str(getattr(diagnosis, "severity", ""))


def _build_engine(args: argparse.Namespace) -> Any:
    """The rule engine: built-in rules, the user's ($XDG_CONFIG_HOME/spectui/rules) and --rules DIRs."""
    from pathlib import Path

    from spectui.commands.check.rules import load_rules_cached
    from spectui.commands.check.scan import CheckInputError
    from spectui.core.rules import RuleEngine, default_rule_dirs
    from spectui.errors import CommandParseError

    for directory in args.rules:
        if not Path(directory).is_dir():
            raise CheckInputError(f"--rules {directory}: not a directory of rule files")
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    rules, errors = load_rules_cached([*default_rule_dirs(config_home), *map(Path, args.rules)])
    for error in errors:  # a broken rule file is reported and skipped; the others still run
        print(f"spectui check: {error}", file=sys.stderr)
    launch = None
    if args.launch:
        from spectui.core.launch import parse_pasted

        try:
            launch, assumed = parse_pasted(args.launch)  # the flags alone: launch_server assumed
        except CommandParseError as exc:
            raise CheckInputError(f"--launch: {exc}") from None
        if assumed:
            print(f"spectui check: --launch: {assumed}", file=sys.stderr)
    return RuleEngine(rules, launch=launch, version=args.sglang_version, baseline_tps=args.baseline_tps,
                      draft=_draft_findings(args, launch))


def _draft_findings(args: argparse.Namespace, launch: Any) -> list[Any]:
    """The draft inspector's findings for the DRAFT rules: --inspect, or --launch naming a local draft folder."""
    from spectui.commands.check.scan import CheckInputError

    if launch is None:
        if getattr(args, "inspect", False):
            raise CheckInputError("--inspect needs --launch CMD naming the draft (and the model)")
        return []
    import asyncio

    from spectui.sources.ckptreader import inspect_launch, launch_inputs
    from spectui.sources.local import LocalHost

    draft = launch_inputs(launch, args.sglang_version).draft
    if not getattr(args, "inspect", False) and not (draft and os.path.isdir(draft)):
        return []
    done = asyncio.run(inspect_launch(LocalHost(read_only=True), launch, version=args.sglang_version))
    return list(done.inspection.findings)
