"""What a group relaunch plans and reports: the plan of every member (one ops.relaunch.plan.RelaunchPlan each, the
same edits on every node) and the outcome of every member, shaped like ops.relaunch.outcome.RelaunchResult for the
primary (the node that serves HTTP and prints the decode lines) so the CLI and the cockpit read one the
way they read the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spectui.ops.hostcmds import display_argv
from spectui.ops.relaunch.outcome import Attempt, Progress
from spectui.ops.relaunch.plan import RelaunchPlan


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One process of the group as the operator gave it: where it runs and which server it is."""

    host: Any  # a sources Host (local or SSH), connected
    label: str  # "root@gpu2 (node 1/2)"
    pid: int | None = None
    log: str | None = None


@dataclass(frozen=True, slots=True)
class GroupPlan:
    kind: str  # "2 nodes", "PD"
    members: tuple[GroupMember, ...]
    plans: tuple[RelaunchPlan, ...]  # one per member, same order
    roles: tuple[Any, ...]  # ops.group.members.NodeRole per member
    primary: int  # index of the member that serves HTTP (node rank 0, the decode side of PD)
    start_order: tuple[int, ...]  # node rank 0 first: it hosts the rendezvous the others join

    @property
    def plan(self) -> RelaunchPlan:
        return self.plans[self.primary]

    @property
    def needs_force(self) -> bool:
        return any(p.needs_force for p in self.plans)

    @property
    def verdict_line(self) -> str:
        bad = [(m, p) for m, p in zip(self.members, self.plans, strict=True) if p.needs_force]
        if not bad:
            return "ok"
        return "; ".join(f"{m.label}: {p.verdict_line}" for m, p in bad)

    def render(self, *, own_pgids: Any = ()) -> str:
        head = (f"group relaunch of a {self.kind} server: every node is stopped, then all are started "
                f"({self.members[self.start_order[0]].label} first) and must all become healthy; a failure "
                "restores the previous command on every node")
        parts = [head]
        for m, p in zip(self.members, self.plans, strict=True):
            parts.append(f"\n── {m.label} ──")
            parts.append(p.render(own_pgids=own_pgids))
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"group": self.kind, "members": [{"label": m.label, "node": r.describe if r else None, **p.to_json()}
                                                for m, r, p in zip(self.members, self.roles, self.plans, strict=True)]}


@dataclass(frozen=True, slots=True)
class MemberOutcome:
    label: str
    node: str
    plan: RelaunchPlan
    new: Attempt
    rollback: Attempt | None = None
    history_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "node": self.node, "old_pid": self.plan.server.pid, "new_pid": self.new.pid,
                "log": self.new.log, "command": display_argv(self.plan.new.argv), "healthy": self.new.healthy,
                "rolled_back": self.rollback is not None and self.rollback.healthy, "error": self.new.error,
                "rollback": self.rollback.to_json() if self.rollback else None, "history_id": self.history_id}


@dataclass(frozen=True, slots=True)
class GroupResult:
    """Every member's outcome; `plan`, `new`, `rollback` and `history_id` are the primary's."""

    group: GroupPlan
    members: tuple[MemberOutcome, ...]
    message: str
    steps: tuple[Progress, ...] = field(default=())
    failed_first: int | None = None  # the member whose failure ended the new launch (None: healthy, or a stop failed)

    @property
    def plan(self) -> RelaunchPlan:
        return self.group.plan

    @property
    def new(self) -> Attempt:
        return self.members[self.group.primary].new

    @property
    def rollback(self) -> Attempt | None:
        return self.members[self.group.primary].rollback

    @property
    def history_id(self) -> str | None:
        return self.members[self.group.primary].history_id

    @property
    def failed_attempt(self) -> Attempt | None:
        """The start that ended the relaunch: the member that failed first (not one only stopped from waiting
        because another failed), else the first that is not healthy."""
        if self.failed_first is not None:
            return self.members[self.failed_first].new
        return next((m.new for m in self.members if not m.new.healthy), None)

    @property
    def healthy(self) -> bool:
        return all(m.new.healthy for m in self.members)

    @property
    def rolled_back(self) -> bool:
        return not self.healthy and all(m.rollback is not None and m.rollback.healthy for m in self.members)

    def to_json(self) -> dict[str, Any]:
        p = self.members[self.group.primary]
        return {"group": self.group.kind, "old_pid": p.plan.server.pid, "new_pid": p.new.pid, "log": p.new.log,
                "command": display_argv(p.plan.new.argv), "healthy": self.healthy, "rolled_back": self.rolled_back,
                "error": next((m.new.error for m in self.members if m.new.error), None), "message": self.message,
                "history_id": p.history_id, "members": [m.to_json() for m in self.members]}
