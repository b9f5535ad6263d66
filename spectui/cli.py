"""Command-line entry point: argparse subcommands dispatched lazily to spectui.commands.<name>.

Each command module exposes `add_arguments(parser)` and `run(args) -> int`. Command modules import
nothing heavy at module level, so `spectui --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from spectui.commands.sshopts import add_ssh_options  # noqa: F401  (kept importable from here)

# name -> (module, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "connect": ("spectui.commands.connect", "open the cockpit on a host's SGLang server"),
    "demo": ("spectui.commands.demo", "start a simulated SGLang server and open the cockpit on it"),
    "check": ("spectui.commands.check", "triage a log file headlessly (parse, metrics, rules)"),
    "flags": ("spectui.commands.flags", "pre-flight: what an SGLang release will do with a launch command"),
    "watch": ("spectui.commands.watch", "follow a live log headlessly, print events (JSONL)"),
    "relaunch": ("spectui.commands.relaunch", "restart the server with edited flags (diff, verdict, confirm)"),
    "rules": ("spectui.commands.rules", "list, explain and test the diagnosis rules"),
    "fleet": ("spectui.commands.fleet", "every SGLang server a Prometheus scrapes, worst first"),
    "serve": ("spectui.commands.serve", "the cockpit in a browser (127.0.0.1, token in the URL, read-only)"),
    "record": ("spectui.commands.record", "record an incident bundle (log, launch, config, snapshots; secrets masked)"),
    "report": ("spectui.commands.report", "a GitHub-issue report (md or json) from a bundle or a live target"),
    "inspect": ("spectui.commands.inspect", "is the draft checkpoint the problem? (config.json + safetensors headers)"),
    "bench": ("spectui.commands.bench", "load the server's OpenAI API and measure: tok/s, TTFT/TPOT/ITL, accept length, × no speculation"),
    "advise": ("spectui.commands.advise", "the chain depth to run: predicted accept len and speed by depth, from what was observed"),
    "sweep": ("spectui.commands.sweep", "relaunch + bench every config of a grid; table, Pareto front, best; put the command back"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with `only`, just that subcommand gets its arguments (and its module imported)."""
    from spectui import __version__

    parser = argparse.ArgumentParser(
        prog="spectui",
        description="A terminal cockpit for SGLang speculative decoding.",
    )
    parser.add_argument("--version", action="version", version=f"spectui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subs: dict[str, argparse.ArgumentParser] = {}
    for name, (module_name, help_text) in COMMANDS.items():
        cmd_parser = subs[name] = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            importlib.import_module(module_name).add_arguments(cmd_parser)
            cmd_parser.set_defaults(_module=module_name)
    parser.set_defaults(_subparsers=subs)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Import only the command being run: `spectui check` need not load the simulator or the TUI.
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand, with its own usage (argparse would print the top-level one)
        sub = getattr(args, "_subparsers", {}).get(getattr(args, "command", None) or "", parser)
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    module_name = getattr(args, "_module", None)
    if module_name is None:
        parser.print_help()
        return 2
    module = importlib.import_module(module_name)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `spectui watch ... | head`: the reader went away. Point stdout at devnull so the flush at exit
        # does not raise again (the recipe in Python's signal docs), and exit quietly like grep.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

if __name__ == "__main__":
    raise SystemExit(main())
