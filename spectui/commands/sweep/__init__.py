"""`spectui sweep TARGET --grid FLAG=V1,V2,...`: relaunch, warm up and bench every distinct valid config of a
grid, then put the original command (or the best, `--apply-best`) back (CONTRACTS.md).

Grid axes: `FLAG=V1,V2` (an SGLang flag, as in `relaunch --set`), `env:NAME=V1,V2` (the server's environment,
as in `relaunch --set-env`; the simulator's faults travel so: `--grid env:SPECTUI_SIM_FAULT=-,oom-at-capture`);
`-` means absent. The sweep writes a journal (JSONL) as it goes; `--resume FILE` skips what it records.
`--baseline` measures the no-speculation baseline once, before the grid (as `bench --baseline` does, with
the same workload), so every config's speedup is against a measured baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "spectui sweep"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.bench import add_common_arguments as bench_arguments

    bench_arguments(parser)  # TARGET, --pid, the workload, --baseline/--baseline-tps, --json, SSH options
    parser.add_argument("--grid", action="append", default=[], metavar="FLAG=V1,V2,...",
                        help="an axis: an SGLang flag without dashes (speculative-num-steps=1,3,5) or "
                             "env:NAME=V1,V2 for the server's environment; - = absent (repeatable: the product)")
    parser.add_argument("--apply-best", action="store_true", help="leave the best config running (default: the original)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration; change nothing")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="do not ask before the restarts (the plan is still printed); without a terminal to "
                             "ask on, --yes is needed")
    parser.add_argument("--resume", metavar="FILE", help="continue the sweep journalled in FILE (skips what is done)")
    parser.add_argument("--journal", metavar="FILE", help="where to write the journal (default: the XDG state folder)")
    parser.add_argument("--csv", metavar="FILE", help="also write the results table as CSV")
    parser.add_argument("--no-plot", action="store_true", help="no terminal plot")
    parser.add_argument("--health-timeout", type=float, default=900.0, metavar="S",
                        help="seconds each new server has to become healthy (default 900)")
    parser.add_argument("--stop-timeout", type=float, default=30.0, metavar="S",
                        help="seconds between SIGTERM and SIGKILL (default 30)")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    try:
        return asyncio.run(_run(args))
    except SpectuiError as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return exc.exit_code


def _options(args: argparse.Namespace) -> Any:
    from spectui.errors import UsageError
    from spectui.load import BenchConfig, load_prompts
    from spectui.ops.relaunch.outcome import RelaunchOptions
    from spectui.ops.sweep.run import SweepOptions

    if args.baseline_tps is not None and not args.baseline_tps > 0:
        raise UsageError("--baseline-tps must be > 0 tok/s")
    for name in ("health_timeout", "stop_timeout"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0")
    config = BenchConfig("http://127.0.0.1", requests=args.requests, duration_s=args.duration,
                         concurrency=args.concurrency or None, rate=args.rate, warmup=args.warmup,
                         max_tokens=args.max_tokens, temperature=args.temperature, api_key=args.api_key)
    config.validate()
    relaunch = RelaunchOptions(stop_grace_s=args.stop_timeout, health_timeout_s=args.health_timeout)
    return SweepOptions(config, load_prompts(args.prompts), baseline_tps=args.baseline_tps,
                        apply_best=args.apply_best, relaunch=relaunch, pid=args.pid,
                        server_port=args.server_port, measure_baseline=args.baseline)


def _axes(args: argparse.Namespace, journal: Any) -> list[Any]:
    from spectui.errors import UsageError
    from spectui.ops.sweep.plan import parse_grid
    from spectui.ops.sweep.run import check_resume

    if args.grid:
        axes = parse_grid(args.grid)
        if journal is not None:
            check_resume(journal, axes)
        return axes
    if journal is None:
        raise UsageError("give at least one --grid FLAG=V1,V2,... (or --resume FILE)")
    return parse_grid([f"{g['label']}={','.join(g['values'])}" for g in journal.header["grid"]])


async def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from spectui.commands.sweep import view
    from spectui.errors import UsageError
    from spectui.ops.sweep.journal import Journal, default_journal_path
    from spectui.ops.sweep.run import Sweep
    from spectui.sources.target import open_host, parse_target

    target = parse_target(args.target)
    if target.kind not in ("local", "ssh"):
        raise UsageError(f"sweep needs a host, not a log file: use local or [user@]host[:port] (got {args.target!r})")
    if not (args.dry_run or args.yes or sys.stdin.isatty()):  # refused before anything runs
        raise UsageError("a sweep restarts the server once per config and stdin is not a terminal to confirm it on: "
                         "pass --yes to go ahead without asking (or --dry-run to see the plan)")
    journal = Journal.read(args.resume) if args.resume else None
    axes = _axes(args, journal)
    options = _options(args)
    if journal is None:
        journal = Journal(Path(args.journal) if args.journal else default_journal_path())
    host = open_host(target, args, read_only=args.dry_run)

    def note(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    sweep = Sweep(host, axes, options, journal, on_note=note)
    await host.connect()
    try:
        plan = await sweep.make_plan()
        if args.dry_run:
            est = await view.estimate_for(host, plan, options)
            out = view.dry_run_json(plan, est)
            if args.json:
                print(json.dumps(out))
            else:
                view.print_plan(plan, est)
            return 0
        if not plan.to_launch:
            raise UsageError("every combination is refused by SGLang or a duplicate: nothing to launch "
                             "(see --dry-run)")
        view.print_plan(plan, await view.estimate_for(host, plan, options), stderr=args.json)  # what is confirmed
        if not args.yes and not _confirmed(len(plan.to_launch), plan.server.pid, plan.host_name):
            print(f"{NAME}: not confirmed; nothing was changed", file=sys.stderr)
            return 1
        note(f"journal {journal.path} (resume with --resume {journal.path})")
        out = await _with_interrupt(sweep)
    finally:
        await host.close()
    if args.csv:
        view.write_csv(args.csv, out)
    if args.json:
        print(json.dumps(out))
    else:
        view.print_results(out, plot=not args.no_plot)
    restore = out.get("restore") or {}
    if out.get("interrupted"):
        return 130 if restore.get("healthy") else 1
    measured = not args.baseline or (out.get("baseline") or {}).get("source") == "measured"
    return 0 if restore.get("healthy") and out.get("best") is not None and measured else 1


def _confirmed(launches: int, pid: int, host: str) -> bool:
    try:
        answer = input(f"Stop pid {pid} on {host} and relaunch it {launches} times (+1 to put the command back)? "
                       "[y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def _with_interrupt(sweep: Any) -> dict[str, Any]:
    """Run the sweep with Ctrl-C (SIGINT) and SIGTERM routed to sweep.interrupt()."""
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, sweep.interrupt)
    try:
        return await sweep.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
