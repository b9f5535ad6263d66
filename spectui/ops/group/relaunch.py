"""Relaunch of one SGLang server spread over several processes (multi-node TP/PP, PD disaggregation) as one
transaction: the same edits on every node, every node stopped, then all started the way SGLang's multi-node
launch needs, and all healthy — or the previous command restored on every node.

Why together: the nodes of a multi-node server meet at `--dist-init-addr` (node rank 0 hosts the
torch.distributed store the others join) and none loads a weight until all have joined; a node restarted
alone waits for peers that will never come, and the survivors of a lost peer fail. So:

1. plan every member with ops.relaunch.run.prepare (the same Edits; each keeps its own `--node-rank`, host, env);
   edits that change the group's shape (`--nnodes`, `--node-rank`, `--disaggregation-mode`, dropping
   `--dist-init-addr`) are refused, and so is a group with a node not connected;
2. hold every member's relaunch lock and run every member's pre-flight (ops.relaunch.runner) before anything
   changes — any refusal leaves every node as it was;
3. stop every member's process group (SIGTERM, SIGKILL after the grace, port free, GPU released);
4. start node rank 0 first (prefill before decode for PD), then the others at once, without waiting for
   health in between — rank 0 cannot be healthy before its peers joined;
5. wait for all: rank 0 on its /health, the other ranks on theirs (SGLang's dummy health server on their
   `--port`), every log through the rules; the first member that fails ends the wait. A rank >= 1 whose port
   still refuses /health `peer_grace_s` (20 s) after rank 0 is healthy, alive with a clean log, is taken as up
   (rank 0's health needs every rank; some releases start no reachable health server there, sglang#12297).
   A PD side may itself span nodes: its ranks >= 1 are judged against that side's own rank 0;
6. on failure, stop whatever of the new launch still runs on every node and start the previous command on
   every node the same way (unless --no-rollback).

History: one record per member, sharing a `group` id. Progress messages name the member."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from spectui.aio import cancel_and_wait
from spectui.errors import HostError, RelaunchError
from spectui.ops import procs
from spectui.ops.group.members import group_targets, node_role
from spectui.ops.group.result import GroupMember, GroupPlan, GroupResult, MemberOutcome
from spectui.ops.history import HistoryStore, LaunchRecord, masked_diff, masked_env_diff, now_iso
from spectui.ops.hostcmds import display_argv
from spectui.ops.relaunch.outcome import Attempt, Progress, RelaunchOptions, Step
from spectui.ops.relaunch.plan import Edits
from spectui.ops.relaunch.runner import Runner, StepFailed

__all__ = ["GroupMember", "GroupPlan", "GroupResult", "execute_group", "prepare_group"]

_SHAPE = ("nnodes", "node-rank", "disaggregation-mode")


def _check_shape(edits: Edits) -> None:
    touched = [f for f, _ in edits.sets if f in _SHAPE] + [f for f in edits.unsets if f in (*_SHAPE, "dist-init-addr")]
    if touched:
        raise RelaunchError(f"--{touched[0]} changes the group's shape (which node is which): a group relaunch keeps "
                            "every node's role; nothing was changed — change the nodes by hand")


async def prepare_group(members: Sequence[GroupMember], edits: Edits, *, now: datetime | None = None) -> GroupPlan:
    """Plan the relaunch of every member (the same edits). Raises RelaunchError when the members are not one
    multi-node / PD server, a node is not connected, or an edit would change the group's shape. Changes
    nothing on any host."""
    from spectui.ops.relaunch.run import prepare

    if len(members) < 2:
        raise RelaunchError("a group relaunch needs every node of the server (two or more)")
    _check_shape(edits)
    now = now or datetime.now()
    plans = tuple([await prepare(m.host, edits, pid=m.pid, log=m.log, now=now) for m in members])
    roles = tuple(node_role(p.old) for p in plans)
    groups = group_targets([p.old for p in plans])
    labels = [m.label for m in members]
    if any(r is None for r in roles) or len(groups) != 1:
        parts = ", ".join(f"{lab} ({r.describe if r else 'one server on its own'})" for lab, r in zip(labels, roles, strict=True))
        raise RelaunchError(f"these servers are not one multi-node or PD server ({parts}): relaunch them one by one; "
                            "nothing was changed")
    group = groups[0]
    missing = group.missing()
    if missing:
        raise RelaunchError(f"not every node of the {group.kind} server is connected (missing {', '.join(missing)}): "
                            "stopping some nodes would leave the rest waiting for peers; nothing was changed — "
                            "connect every node, then relaunch the group")
    for r, p in zip(roles, plans, strict=True):
        new = node_role(p.new)
        if new is None or new.node_rank != r.node_rank or new.pd_mode != r.pd_mode:  # type: ignore[union-attr]
            raise RelaunchError("the edited commands no longer make one group; nothing was changed")
    order = tuple(sorted(range(len(members)), key=lambda i: (roles[i].pd_mode == "decode", roles[i].node_rank)))  # type: ignore[union-attr]
    return GroupPlan(group.kind, tuple(members), plans, roles, group.members[group.primary], order)


async def execute_group(gplan: GroupPlan, options: RelaunchOptions | None = None, *,
                        on_progress: Callable[[Progress], None] | None = None, history: HistoryStore | None = None,
                        rules_dirs: Sequence[Any] = (), on_logs: Callable[[list[str]], None] | None = None) -> GroupResult:
    """Carry out a group plan. Raises RelaunchError (every node unchanged) when a pre-flight is refused or
    another relaunch of a member runs; after that every failure ends in a GroupResult saying
    what runs now on every node. `on_logs`: called with every member's log just before the nodes are started
    (the new logs, then the restored ones on a rollback), so a follower can move to them at once."""
    from spectui.ops.relaunch.run import relaunch_lock

    store = history or HistoryStore()
    with contextlib.ExitStack() as locks:
        for p in gplan.plans:
            locks.enter_context(relaunch_lock(p, store.path.parent / "locks"))
        return await _Group(gplan, options or RelaunchOptions(), on_progress, store, rules_dirs, on_logs).execute()


class _Group:
    def __init__(self, gplan: GroupPlan, opt: RelaunchOptions, on_progress: Callable[[Progress], None] | None,
                 store: HistoryStore, rules_dirs: Sequence[Any], on_logs: Callable[[list[str]], None] | None) -> None:
        self.g, self.opt, self.store, self.on_logs = gplan, opt, store, on_logs
        self.steps: list[Progress] = []
        self.failed_first: int | None = None  # the member whose failure ended the new launch
        self._on_progress = on_progress
        self.runners = [Runner(m.host, p, opt, self._noter(m.label), rules_dirs)
                        for m, p in zip(gplan.members, gplan.plans, strict=True)]

    def _noter(self, label: str) -> Callable[[Progress], None]:
        def note(p: Progress) -> None:
            q = dataclasses.replace(p, message=f"{label}: {p.message}")
            self.steps.append(q)
            if self._on_progress is not None:
                self._on_progress(q)
        return note

    def _node(self, i: int) -> str:
        r = self.g.roles[i]
        return r.describe if r is not None else ""

    async def execute(self) -> GroupResult:
        for r in self.runners:  # every pre-flight before anything changes
            await r.preflight()
        group_id = uuid.uuid4().hex[:12]
        ids = []
        for i, p in enumerate(self.g.plans):
            ids.append(uuid.uuid4().hex[:12])
            self.store.append(LaunchRecord(
                id=ids[-1], time=now_iso(), host=p.host_name, old_pid=p.server.pid, old_command=display_argv(p.old.argv),
                command=display_argv(p.new.argv), diff=masked_diff(p.changes),  # type: ignore[arg-type]
                env_diff=masked_env_diff(p.env_changes),  # type: ignore[arg-type]
                sglang_version=p.version, verdict=p.resolution.outcome, forced=p.needs_force, log=p.log_path,
                group=group_id, node=self._node(i),
                owner_uid=(self.runners[i].run_as or (None, ""))[0], owner_user=(self.runners[i].run_as or (None, ""))[1]))
        try:
            new, back, message = await self._run()
        except RelaunchError as exc:  # refused before any stop: every node runs untouched
            for launch_id in ids:
                self.store.update(launch_id, outcome="failed", error=str(exc), ended=now_iso())
            raise
        except (Exception, asyncio.CancelledError) as exc:  # never leave a record "running"
            from spectui.ops.relaunch.run import _interrupted

            for launch_id, r in zip(ids, self.runners, strict=True):
                self.store.update(launch_id, outcome="failed", error=_interrupted(r, exc), new_pid=r.started_pid,
                                  ended=now_iso())
            raise
        outcomes = []
        for i, (launch_id, p) in enumerate(zip(ids, self.g.plans, strict=True)):
            a, b = new[i], back[i]
            outcome = "healthy" if a.healthy else "failed" if b is None else "rolled_back" if b.healthy else "rollback_failed"
            self.store.update(launch_id, new_pid=a.pid, outcome=outcome, error=a.error,
                              rollback_pid=b.pid if b else None, rollback_log=b.log if b else None,
                              accept_len=a.accept_len, gen_tokens_per_s=a.gen_tokens_per_s,
                              diagnoses=[f"{d.rule}: {d.title}" for d in a.diagnoses], ended=now_iso())
            outcomes.append(MemberOutcome(self.g.members[i].label, self._node(i), p, a, b, launch_id))
        return GroupResult(self.g, tuple(outcomes), message, tuple(self.steps), self.failed_first)

    # -- the transaction ------------------------------------------------------------------------------

    async def _run(self) -> tuple[list[Attempt], list[Attempt | None], str]:
        n, kind = len(self.runners), self.g.kind
        labels = [m.label for m in self.g.members]
        none: list[Attempt | None] = [None] * n
        try:
            await self._stop_old()
        except (StepFailed, HostError) as exc:
            reason = f"stopping the old server failed ({exc})"
            new = [Attempt(None, None, False, f"not started: {reason}") for _ in range(n)]
            return await self._after_failure(reason, new)
        new, bad = await self._start_all(rollback=False)
        if bad is None:
            pids = ", ".join(f"{lab} pid {a.pid}" for lab, a in zip(labels, new, strict=True))
            msg = f"relaunched the {kind} group: every node is healthy ({pids}); log {new[self.g.primary].log}"
            return new, none, msg
        self.failed_first = bad
        return await self._after_failure(f"{labels[bad]}: {new[bad].error or 'failed'}", new)

    async def _stop_old(self) -> None:
        """SIGTERM every node's old process group at once (then each one's waits: SIGKILL after the grace, port,
        GPU): a node stopped alone first would see its peers vanish and log their loss as a crash. Every
        pre-flight has already checked the signal reaches each group."""
        order = list(self.g.start_order)

        def stop(i: int) -> Any:
            r, s = self.runners[i], self.g.plans[i].server
            return r.stop(s.pgid, [p.pid for p in r.group], s.port, rollback=False, first=False)

        results = await asyncio.gather(*(stop(i) for i in order), return_exceptions=True)
        for i, res in zip(order, results, strict=True):
            if isinstance(res, HostError):
                await self.runners[i].reconnect(res)
            if isinstance(res, BaseException):
                raise StepFailed(f"{self.g.members[i].label}: {res}")

    async def _start_all(self, *, rollback: bool) -> tuple[list[Attempt], int | None]:
        """Start every node (rank 0 first, no health wait in between), then wait for all; the first that fails
        ends the wait for the others. Returns every node's Attempt and the index of the one that failed first
        (None: all healthy)."""
        n = len(self.runners)
        out: list[Attempt | None] = [None] * n
        pids: dict[int, tuple[int, str, int]] = {}
        logs = [await r.rollback_log() if rollback else p.log_path for r, p in zip(self.runners, self.g.plans, strict=True)]
        if self.on_logs is not None:
            self.on_logs(logs)
        for i in self.g.start_order:
            r, p, log = self.runners[i], self.g.plans[i], logs[i]
            port = (p.server.port or p.port) if rollback else p.port
            argv = p.old.argv if rollback else p.new.argv
            try:
                started = await r.start(argv, log, rollback=rollback)
            except HostError as exc:
                await r.reconnect(exc)
                started = Attempt(None, log, False, f"connection lost while starting ({exc})")
            if isinstance(started, Attempt):
                out[i] = started
                break
            pids[i] = (started, log, port)
        if any(a is not None for a in out):  # a start failed: the others are not waited for
            failed = next(i for i, a in enumerate(out) if a is not None)
            for i in range(n):
                if out[i] is None:
                    pid, log, _ = pids.get(i, (None, None, 0))
                    out[i] = Attempt(pid, log, False, f"not healthy: {self.g.members[failed].label} did not start")
            return [a for a in out if a is not None], failed
        tasks = {asyncio.create_task(self._wait(i, *pids[i], rollback)): i for i in pids}
        pending = set(tasks)
        loop, grace_end = asyncio.get_running_loop(), None
        try:
            while pending:
                left = None if grace_end is None else max(0.0, grace_end - loop.time())
                done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    out[tasks[t]] = t.result()
                if any(a is not None and not a.healthy for a in out):
                    break
                if grace_end is None and pending:
                    if not all(self._peer(tasks[t]) and self._lead_up(tasks[t], out) for t in pending):
                        continue  # a node 0 (or a PD side's own server) is still starting: its /health decides
                    grace_end = loop.time() + self.opt.peer_grace_s
                elif grace_end is not None and not done and loop.time() >= grace_end:
                    self._peers_up(out, pids, [tasks[t] for t in pending])
                    break
        finally:
            await cancel_and_wait(pending)
        failed = next((i for i, a in enumerate(out) if a is not None and not a.healthy), None)
        for i in range(n):
            if out[i] is None:
                pid, log, _ = pids[i]
                why = self.g.members[failed].label if failed is not None else "another node"
                out[i] = Attempt(pid, log, False, f"not waited for: {why} failed first")
        return [a for a in out if a is not None], failed

    def _peer(self, i: int) -> bool:
        """Node i is a rank >= 1 of a multi-node server, or of a multi-node PD side (no API of its own; its
        node 0's health needs it up)."""
        r = self.g.roles[i]
        return r is not None and r.node_rank >= 1

    def _lead_up(self, i: int, out: Sequence[Attempt | None]) -> bool:
        """The node 0 of node i's server (the same PD side, if any) has been found healthy."""
        mode = self.g.roles[i].pd_mode  # type: ignore[union-attr]
        return any(a is not None and a.healthy and r is not None and r.node_rank == 0 and r.pd_mode == mode
                   for a, r in zip(out, self.g.roles, strict=True))

    def _peers_up(self, out: list[Attempt | None], pids: dict[int, tuple[int, str, int]], waiting: list[int]) -> None:
        """Node 0 is healthy, so every rank joined and loaded (its collectives need them all); nodes >= 1 whose
        port still refuses /health, alive and with no error in their logs (their watchers would have ended),
        are taken as up: some releases start no reachable health server there (sgl-project/sglang#12297)."""
        for i in waiting:
            pid, log, port = pids[i]
            self.runners[i].note(Step.HEALTHY, f"pid {pid} is up: node 0 is healthy and this node's process lives "
                                 f"with no error in its log, but its /health on port {port} never answered "
                                 "(some SGLang releases start no reachable health server on nodes >= 1)", pid=pid)
            out[i] = Attempt(pid, log, True, None)

    async def _wait(self, i: int, pid: int, log: str, port: int, rollback: bool) -> Attempt:
        r = self.runners[i]
        try:
            return await r.wait(pid, log, port, rollback=rollback)
        except HostError as exc:
            return Attempt(pid, log, False, f"lost the connection to {self.g.members[i].label} ({exc})")

    async def _after_failure(self, reason: str, new: list[Attempt]) -> tuple[list[Attempt], list[Attempt | None], str]:
        kind, labels = self.g.kind, [m.label for m in self.g.members]
        first = self.runners[self.g.primary]
        first.note(Step.FAILED, f"group relaunch failed: {reason}")
        if not self.opt.rollback:
            msg = (f"group relaunch failed: {reason}; not rolled back (--no-rollback): the {kind} group is not healthy; "
                   "what runs: " + ", ".join(f"{lab} pid {a.pid or '–'}" for lab, a in zip(labels, new, strict=True)))
            return new, [None] * len(new), msg
        for r in self.runners:
            r.note(Step.ROLLING_BACK, "restoring the previous command", rollback=True)
        back: list[Attempt | None]
        try:
            await asyncio.gather(*(self._clear(i, a) for i, a in enumerate(new)))
            back = list((await self._start_all(rollback=True))[0])
        except (StepFailed, HostError, RelaunchError) as exc:
            back = [Attempt(None, None, False, f"rollback: {exc}") for _ in new]
        if all(b is not None and b.healthy for b in back):
            for r, b in zip(self.runners, back, strict=True):
                r.note(Step.ROLLED_BACK, f"previous command healthy again as pid {b.pid}", rollback=True, pid=b.pid)  # type: ignore[union-attr]
            pids = ", ".join(f"{lab} pid {b.pid}" for lab, b in zip(labels, back, strict=True))  # type: ignore[union-attr]
            return new, back, (f"group relaunch failed: {reason}; rolled back: the previous command serves again on "
                               f"every node ({pids})")
        bad = [(lab, b) for lab, b in zip(labels, back, strict=True) if b is None or not b.healthy]
        for r, b in zip(self.runners, back, strict=True):
            if b is not None and not b.healthy:
                r.note(Step.ROLLBACK_FAILED, f"rollback failed: {b.error}", rollback=True, pid=b.pid)
        what = "; ".join(f"{lab}: {b.error if b else 'not restored'}" for lab, b in bad)
        return new, back, (f"group relaunch failed: {reason}; rollback failed too ({what}); no healthy {kind} group — "
                           "see the nodes' logs")

    async def _clear(self, i: int, new: Attempt) -> None:
        """Before restoring: stop what of the new launch still runs on node i, and the old server if its
        stop failed (a group restarts whole)."""
        r, s = self.runners[i], self.g.plans[i].server
        listing = await procs.list_procs(r.host)
        for pgid, port in ((new.pid, self.g.plans[i].port), (s.pgid, s.port)):
            if pgid is None:
                continue
            alive = procs.alive_in_group(listing, pgid)
            if alive:
                await r.stop(pgid, [p.pid for p in alive], port, rollback=True, first=False)
