"""The cockpit's side of a group relaunch: a group tab (multi-node TP/PP, PD) knows its member Sessions;
the relaunch screen's edits go to ops.group.relaunch for every member, and afterwards each member Session
follows what runs now (the new launch, or the restored one), so the group's merged tail reopens on the
new logs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GroupTarget:
    kind: str  # "2 nodes", "PD"
    members: tuple[Any, ...]  # ui.session.Session per process
    labels: tuple[str, ...]  # "root@gpu2 (node 1/2)"

    def describe(self) -> str:
        return ", ".join(f"{lab} pid {s.pid or '?'}" for lab, s in zip(self.labels, self.members, strict=True))


async def run_group_relaunch(session: Any, edits: Any, *, progress: Callable[[str, str], None]) -> Any:
    """The relaunch screen's edits (ops.relaunch.plan.Edits) on every member of `session.group`, as one transaction
    (ops.group.relaunch)."""
    from spectui.ops.group.relaunch import GroupMember, execute_group, prepare_group

    group: GroupTarget = session.group
    members = [GroupMember(s.host, label, s.pid, s.log_path) for s, label in zip(group.members, group.labels, strict=True)]
    progress("checking", f"planning the relaunch of every node of the {group.kind} server: {group.describe()}")
    gplan = await prepare_group(members, edits)
    def follow(logs: list[str]) -> None:  # the nodes start now: the group's tail reopens on these logs
        for s, log in zip(group.members, logs, strict=True):
            s.log_path = log

    result = await execute_group(gplan, on_progress=lambda p: progress(
        str(p.step.value), ("rollback: " if p.rollback else "") + p.message), on_logs=follow)
    for s, m in zip(group.members, result.members, strict=True):
        now = m.new if result.healthy else m.rollback if m.rollback is not None and m.rollback.healthy else None
        if now is not None:
            s.log_path, s.current_pid = now.log, now.pid
            if now is m.new:
                s.launch = m.plan.new
    return result
