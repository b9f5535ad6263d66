"""One SGLang server spread over several processes: multi-node TP/PP and prefill/decode disaggregation.

Recognised from the launch flags alone (no host is asked): `--nnodes N --node-rank R --dist-init-addr A`
make the processes of one multi-node server (same init address), and `--disaggregation-mode prefill|decode`
the two sides of a PD deployment (grouped by model path); each side may itself span nodes. The cockpit
shows such a group as one tab: the decode lines of the member that prints them, the errors of every member.

A group is relaunched whole (ops.group.relaunch): every node stopped, then all started, node rank 0 first,
with the same edits. `relaunch_refusal()` says in one line why a group tab cannot be relaunched: a node
the flags promise was not connected (stopping the others would leave it waiting for peers, or running
alone against a group that restarted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_ALIASES = {
    "--nnodes": ("--nnodes",),
    "--node-rank": ("--node-rank",),
    "--dist-init-addr": ("--dist-init-addr", "--nccl-init-addr"),
    "--disaggregation-mode": ("--disaggregation-mode",),
    "--model-path": ("--model-path", "--model"),
}


@dataclass(frozen=True, slots=True)
class NodeRole:
    """What one process is within a larger server."""

    key: tuple[str, str]  # ("multinode", dist-init-addr) or ("pd", model path): members share it
    nnodes: int = 1
    node_rank: int = 0
    pd_mode: str | None = None  # "prefill" / "decode" for PD disaggregation
    dist_init_addr: str | None = None

    @property
    def describe(self) -> str:
        parts = []
        if self.pd_mode:
            parts.append(self.pd_mode)
        if self.nnodes > 1:
            parts.append(f"node {self.node_rank}/{self.nnodes}")
        return " ".join(parts)


def _flags(args: Sequence[str]) -> dict[str, str]:
    """--flag value / --flag=value -> {canonical flag: value} for the few flags read here (last wins)."""
    wanted = {alias: canon for canon, aliases in _ALIASES.items() for alias in aliases}
    out: dict[str, str] = {}
    for i, word in enumerate(args):
        name, eq, val = word.partition("=")
        canon = wanted.get(name)
        if canon is None:
            continue
        if not eq:
            val = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
        out[canon] = val
    return out


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def node_role(launch: Any) -> NodeRole | None:
    """The role of a process from its LaunchCommand (or its argv words); None for a one-process server."""
    if launch is None:
        return None
    args = tuple(getattr(launch, "args", launch))
    f = _flags(args)
    nnodes = _int(f.get("--nnodes"), 1)
    mode = f.get("--disaggregation-mode") or None
    if mode in ("null", "none", ""):
        mode = None
    addr = f.get("--dist-init-addr") or None
    rank = _int(f.get("--node-rank"), 0)
    if mode in ("prefill", "decode"):
        return NodeRole(("pd", f.get("--model-path", "")), nnodes, rank, mode, addr)
    if nnodes > 1:
        return NodeRole(("multinode", addr or ""), nnodes, rank, None, addr)
    return None


@dataclass(frozen=True, slots=True)
class Group:
    """Indices (into the targets given) of the processes of one server, and which one prints decode lines."""

    members: tuple[int, ...]
    roles: tuple[NodeRole | None, ...]
    primary: int  # index into `members`

    @property
    def is_group(self) -> bool:
        return any(r is not None for r in self.roles)

    @property
    def kind(self) -> str:
        if any(r is not None and r.pd_mode for r in self.roles):
            return "PD"
        nnodes = max((r.nnodes for r in self.roles if r is not None), default=1)
        return f"{nnodes} nodes"

    def missing(self) -> list[str]:
        """Members the flags promise that were not given (a node of a 2-node server connected alone)."""
        roles = [r for r in self.roles if r is not None]
        out = []
        if roles and not roles[0].pd_mode:
            have = {r.node_rank for r in roles}
            out += [f"node rank {n}" for n in range(roles[0].nnodes) if n not in have]
        elif roles:
            modes = {r.pd_mode for r in roles}
            out += [f"a {m} server" for m in ("prefill", "decode") if m not in modes]
            for mode in ("prefill", "decode"):  # a side may itself be a multi-node server
                side = [r for r in roles if r.pd_mode == mode]
                if side and side[0].nnodes > 1:
                    have = {r.node_rank for r in side}
                    out += [f"{mode} node rank {n}" for n in range(side[0].nnodes) if n not in have]
        return out


def _primary(roles: Sequence[NodeRole | None]) -> int:
    """The member that prints SGLang's `Decode batch` lines: the decode side of PD, node rank 0 of TP/PP."""
    def rank(i: int) -> tuple[int, int]:
        r = roles[i]
        if r is None:
            return (0, 0)
        return (0 if r.pd_mode in (None, "decode") else 1, r.node_rank)

    return min(range(len(roles)), key=rank)


def group_targets(launches: Sequence[Any]) -> list[Group]:
    """Targets (their launch commands, None when unknown) grouped into servers, in the order first seen."""
    roles = [node_role(launch) for launch in launches]
    by_key: dict[tuple[str, str], list[int]] = {}
    groups: list[list[int]] = []
    for i, role in enumerate(roles):
        if role is None or not role.key[1]:
            groups.append([i])  # one process, or a multi-node flag set without an address to match on
            continue
        if role.key not in by_key:
            by_key[role.key] = []
            groups.append(by_key[role.key])
        by_key[role.key].append(i)
    out = []
    for members in groups:
        member_roles = tuple(roles[i] for i in members)
        out.append(Group(tuple(members), member_roles, _primary(member_roles)))
    return out


def group_label(labels: Sequence[str], group: Group) -> str:
    """A tab label: `gpu1+gpu2 [2 nodes]`, `p1+d1 [PD]`; a one-process server keeps its own label."""
    names = [labels[i] for i in group.members]
    if not group.is_group:
        return names[0]
    return "+".join(names) + f" [{group.kind}]"


def relaunch_refusal(group: Group, labels: Sequence[str]) -> str | None:
    """Why relaunching this tab is refused (None: an ordinary server, or a group with every node connected)."""
    if not group.is_group:
        return None
    missing = group.missing()
    if not missing:
        return None
    names = ", ".join(labels[i] for i in group.members)
    return (f"relaunch refused: this server is a {group.kind} group ({names}) and not every node is connected "
            f"(missing {', '.join(missing)}). Every node must stop and start together: connect them all "
            "(spectui connect NODE0 NODE1 …), then relaunch the group.")
