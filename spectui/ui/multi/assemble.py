"""Sessions (one per target given) into tabs: processes of one multi-node / PD server become one group tab."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from spectui.ops.group.members import group_label, group_targets, relaunch_refusal
from spectui.ui.grouptarget import GroupTarget
from spectui.ui.multi.app import TabSpec
from spectui.ui.multi.grouptail import group_tail
from spectui.ui.session import Session


def distinct_labels(sessions: Sequence[Session]) -> list[str]:
    """Each session's label; two on the same host (`local`, `root@gpu1`) get their log file's name added."""
    import os

    labels = [s.label for s in sessions]
    return [f"{label}:{os.path.basename(s.log_path or '') or i + 1}" if labels.count(label) > 1 else label
            for i, (label, s) in enumerate(zip(labels, sessions, strict=True))]


def tab_specs(sessions: Sequence[Session], baselines: Sequence[float | None] = ()) -> list[TabSpec]:
    """One TabSpec per server: a group's tab follows its primary's log with every member's errors merged in."""
    labels = distinct_labels(sessions)
    base = list(baselines) + [None] * (len(sessions) - len(baselines))
    specs = []
    for group in group_targets([s.launch for s in sessions]):
        members = [sessions[i] for i in group.members]
        primary = members[group.primary]
        label = group_label(labels, group)
        if not group.is_group:
            session = dataclasses.replace(primary, label=label) if label != primary.label else primary
            specs.append(TabSpec(label, session, baseline_tps=base[group.members[0]]))
            continue
        member_labels = [f"{labels[i]} ({r.describe})" if r else labels[i]
                         for i, r in zip(group.members, group.roles, strict=True)]
        tail = group_tail(members, member_labels, group.primary) if len(members) > 1 else None
        target = GroupTarget(group.kind, tuple(members), tuple(member_labels))
        session = dataclasses.replace(primary, label=label, tail_factory=tail or primary.tail_factory, group=target)
        specs.append(TabSpec(label, session, members=tuple(members), refusal=relaunch_refusal(group, labels),
                             baseline_tps=base[group.members[group.primary]]))
    return specs
