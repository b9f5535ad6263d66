"""`spectui relaunch TARGET`: restart the SGLang server with edited flags and environment (diff, verdict,
confirm, rollback)."""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("targets", metavar="TARGET", nargs="+",
                        help="where the server runs: local or [user@]host[:port] (`…:/path/to/log` picks the server "
                             "writing that log). Several TARGETs: every node of one multi-node (--nnodes) or PD "
                             "server, relaunched together (all stopped, then all started, node rank 0 first)")
    parser.add_argument("--pid", type=int, help="the server's pid (when the host runs several); a pid that is "
                        "gone: that server is started again from its last known launch (history, log)")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server listening on port N (when the host runs several)")
    parser.add_argument("--set", dest="sets", metavar="FLAG=VALUE", action="append", default=[],
                        help="set a flag, written without dashes: --set speculative-num-steps=15 (repeatable)")
    parser.add_argument("--unset", dest="unsets", metavar="FLAG", action="append", default=[],
                        help="remove a flag: --unset speculative-num-draft-tokens (repeatable)")
    parser.add_argument("--set-env", dest="env_sets", metavar="NAME=VALUE", action="append", default=[],
                        help="set a variable in the new server's environment (otherwise the old server's, exactly): "
                             "--set-env NCCL_DEBUG=INFO (repeatable)")
    parser.add_argument("--unset-env", dest="env_unsets", metavar="NAME", action="append", default=[],
                        help="remove a variable from the new server's environment (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the host commands; change nothing")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    parser.add_argument("--no-rollback", action="store_true", help="on failure, do not restore the previous command")
    parser.add_argument("--force", action="store_true",
                        help="launch even if the pre-flight says SGLang rejects the command")
    parser.add_argument("--as-owner", action="store_true",
                        help="a server owned by another user than the one spectui acts as: stop and start it as "
                             "its owner through the host's `sudo -n -u OWNER` (otherwise refused)")
    parser.add_argument("--read-only", action="store_true", help="never change the host (prints the plan only)")
    parser.add_argument("--health-timeout", type=float, default=900.0, metavar="S",
                        help="seconds to wait for the new server to become healthy (default 900)")
    parser.add_argument("--stop-timeout", type=float, default=30.0, metavar="S",
                        help="seconds between SIGTERM and SIGKILL (default 30)")
    parser.add_argument("--observe", type=float, default=0.0, metavar="S",
                        help="after healthy, read the log S seconds more to record accept len and tok/s")
    parser.add_argument("--peer-grace", type=float, default=20.0, metavar="S",
                        help="a multi-node group: a node >= 1 whose /health never answers counts as up S seconds "
                             "after its node 0 is healthy, if alive with a clean log (default 20)")
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    try:
        return asyncio.run(_run(args))
    except SpectuiError as exc:
        print(f"spectui relaunch: {exc}", file=sys.stderr)
        return exc.exit_code


async def _run(args: argparse.Namespace) -> int:
    from spectui.commands.relaunch.gate import gate, options, owner_refusal, printer, targets_and_edits
    from spectui.ops.procs import own_pgids
    from spectui.ops.relaunch.run import execute, prepare_any
    from spectui.sources.target import open_host

    if len(args.targets) > 1:
        from spectui.commands.relaunch.group import run_group

        return await run_group(args)
    (target,), edits = targets_and_edits(args)
    host = open_host(target, args, read_only=args.read_only)
    if target.kind == "ssh":
        await host.connect()
    try:
        plan = await prepare_any(host, edits, pid=args.pid, log=target.path, port=args.server_port)
        dry = {**plan.to_json(), "old_pid": plan.server.pid, "new_pid": None}
        question = ("No server runs: start the last known command? [y/N] " if plan.from_known
                    else f"Stop pid {plan.server.pid} and start the new command? [y/N] ")
        refused, notes = ((None, []) if args.read_only and not args.dry_run
                          else await owner_refusal(args, [(host, plan)]))
        stop = gate(args, plan, own_pgids(host), dry, question, refused, notes)
        if stop is not None:
            return stop
        result = await execute(host, plan, options(args), on_progress=printer(sys.stderr))
    finally:
        await host.close()
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(result.message)
        for d in result.new.diagnoses[:5]:
            print(f"  {d.severity}: {d.rule} {d.title}")
        if result.new.accept_len is not None:
            tps = result.new.gen_tokens_per_s
            print(f"  accept len {result.new.accept_len:.2f}" + (f", {tps:.1f} tok/s" if tps is not None else ""))
    return 0 if result.healthy else 1
