"""`spectui relaunch NODE0 NODE1 …`: every node of one multi-node (or PD) SGLang server relaunched together
with the same edits (ops.group.relaunch): the plan of every node, one confirmation, progress named by node,
one JSON object with every member's outcome."""

from __future__ import annotations

import argparse
import json
import sys


async def run_group(args: argparse.Namespace) -> int:
    from spectui.commands.relaunch.gate import gate, options, owner_refusal, printer, targets_and_edits
    from spectui.errors import UsageError
    from spectui.ops.group.relaunch import GroupMember, execute_group, prepare_group
    from spectui.ops.procs import own_pgids
    from spectui.sources.target import open_host

    if args.pid is not None:
        raise UsageError("--pid picks one server on one host; with several TARGETs name each node's log instead "
                         "(host:/path/to/node.log) or connect to hosts that run one server each")
    targets, edits = targets_and_edits(args)
    hosts = [open_host(t, args, read_only=args.read_only) for t in targets]
    try:
        for t, h in zip(targets, hosts, strict=True):
            if t.kind == "ssh":
                await h.connect()
        members = [GroupMember(h, text, None, t.path) for text, t, h in zip(args.targets, targets, hosts, strict=True)]
        gplan = await prepare_group(members, edits)
        pids = ", ".join(f"{m.label} pid {p.server.pid}" for m, p in zip(gplan.members, gplan.plans, strict=True))
        refused, notes = ((None, []) if args.read_only and not args.dry_run else
                          await owner_refusal(args, [(m.host, p) for m, p in zip(gplan.members, gplan.plans, strict=True)]))
        stop = gate(args, gplan, own_pgids(hosts[0]), gplan.to_json(),
                    f"Stop every node of the {gplan.kind} server ({pids}) and start the new command on each? [y/N] ",
                    refused, notes)
        if stop is not None:
            return stop
        result = await execute_group(gplan, options(args), on_progress=printer(sys.stderr))
    finally:
        for h in hosts:
            await h.close()
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(result.message)
        failed = result.failed_attempt
        for d in (failed.diagnoses if failed is not None else ())[:5]:
            print(f"  {d.severity}: {d.rule} {d.title}")
    return 0 if result.healthy else 1
