"""What `spectui relaunch` does between the plan and the act, for one server or a group: print the plan,
stop at --dry-run / --read-only / a verdict that needs --force / a confirmation not given; and how it
prints progress."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


async def owner_refusal(args: argparse.Namespace, pairs: Any) -> tuple[str | None, list[str]]:
    """Why the relaunch would be refused for who owns the server (ops.relaunch.owner.check on each (host, plan):
    the very check the relaunch makes, which changes nothing), or None; and, with --as-owner, the plan's
    lines saying whom the signals and the start run as. A dry run says it as the real run would, and
    exits as it would."""
    from spectui.errors import RelaunchError
    from spectui.ops.relaunch import owner

    notes: list[str] = []
    for host, plan in pairs:
        try:
            found = await owner.check(host, plan.server, as_owner=getattr(args, "as_owner", False),
                                      gone=plan.from_known)
        except RelaunchError as exc:
            return str(exc), notes
        if found.as_user:
            notes.append(f"as owner the signals and the start on {host.name} run as {plan.server.user} "
                         f"through `{' '.join(found.as_user)}` (--as-owner)")
    return None, notes


def gate(args: argparse.Namespace, plan: Any, own_pgids: Any, dry_json: dict[str, Any], question: str,
         refused: str | None = None, notes: Any = ()) -> int | None:
    """The exit code when the relaunch stops here (nothing was changed), or None to go on. `plan`: an
    ops.relaunch.plan.RelaunchPlan or an ops.group.result.GroupPlan (render, needs_force, verdict_line). `refused`:
    the owner check's refusal (owner_refusal), said by a dry run and before any question (exit 1)."""
    # --json: stdout is the JSON alone; a dry run prints nothing else (the JSON holds the plan), a real run
    # shows the plan on stderr (what is about to be confirmed) with its progress.
    if not (args.json and args.dry_run):
        print(plan.render(own_pgids=own_pgids), file=sys.stderr if args.json else sys.stdout)
        for note in notes:
            print(note, file=sys.stderr if args.json else sys.stdout)
    if args.dry_run or args.read_only:
        if args.json:
            print(json.dumps({**dry_json, "healthy": None, "rolled_back": False, "dry_run": True,
                              "refused": refused}))
        if args.read_only and not args.dry_run:
            print("spectui relaunch: read-only (--read-only): nothing was changed", file=sys.stderr)
            return 1
        if refused is not None:
            print(f"spectui relaunch: {refused}", file=sys.stderr)
            return 1
        return 0
    if refused is not None:
        print(f"spectui relaunch: {refused}", file=sys.stderr)
        return 1
    if plan.needs_force and not args.force:
        print(f"spectui relaunch: pre-flight: {plan.verdict_line}; fix the flags or pass --force "
              "(nothing was changed)", file=sys.stderr)
        return 1
    if not args.yes and not confirm(question):
        print("spectui relaunch: not confirmed; nothing was changed", file=sys.stderr)
        return 1
    return None


def confirm(question: str) -> bool:
    from spectui.errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("stdin is not a terminal: pass --yes to relaunch without asking (or --dry-run)")
    return input(question).strip().lower() in ("y", "yes")


def printer(stream: Any) -> Any:
    def show(p: Any) -> None:
        prefix = "rollback: " if p.rollback else ""
        print(f"[{p.step}] {prefix}{p.message}", file=stream, flush=True)
    return show


def options(args: argparse.Namespace) -> Any:
    """The ops.relaunch.run.RelaunchOptions a `relaunch` command line asks for."""
    from spectui.ops.relaunch.run import RelaunchOptions

    return RelaunchOptions(force=args.force, rollback=not args.no_rollback, stop_grace_s=args.stop_timeout,
                           health_timeout_s=args.health_timeout, observe_s=args.observe,
                           peer_grace_s=args.peer_grace, as_owner=getattr(args, "as_owner", False))


def targets_and_edits(args: argparse.Namespace) -> tuple[list[Any], Any]:
    """The TARGETs (sources.target.Target, hosts only) and the ops.relaunch.plan.Edits of a `relaunch` command line;
    UsageError (exit 2) for a log-file target or a negative timeout."""
    from spectui.errors import UsageError
    from spectui.ops.relaunch.plan import Edits
    from spectui.sources.target import parse_target

    targets = [parse_target(t) for t in args.targets]
    for text, t in zip(args.targets, targets, strict=True):
        if t.kind not in ("local", "ssh"):
            raise UsageError(f"relaunch needs a host, not a log file: use local or [user@]host[:port] (got {text!r})")
    edits = Edits.from_cli(args.sets, args.unsets, args.env_sets, args.env_unsets)
    for name in ("health_timeout", "stop_timeout", "observe", "peer_grace"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0")
    return targets, edits
