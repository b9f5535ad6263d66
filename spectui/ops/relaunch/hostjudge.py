"""A source build judged by the host's own SGLang (core/launch/hostresolve, sources/hostresolve_run): the
relaunch plan's verdict from what the server's own argparse and ServerArgs resolution make of the old and
the new command line, instead of the nearest release's replayed rules."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

from spectui.core.launch import HostResolveError, is_source_build, resolvable_args
from spectui.core.launch import judge_by_host as judge
from spectui.ops.relaunch.plan import RelaunchPlan
from spectui.sources.hostresolve_run import host_resolution


async def judge_on_host(host: Any, server: Any, plan: RelaunchPlan, version: str | None) -> RelaunchPlan:
    """A source build (`0.5.16.dev0+g2f14d6c6`) is judged by the host's own SGLang: its argparse and
    ServerArgs resolution run with the server's Python on the old and the new command line. Where the host
    cannot say, the replayed rules stand and the plan says why."""
    if version is not None and not is_source_build(version):
        return plan
    try:
        if version is None:  # a gone server (nothing to ask /server_info): the installation it ran says
            probe = await host_resolution(host, server, list(resolvable_args(plan.new)))
            if not is_source_build(probe.get("sglang_version")):
                return plan
        if plan.changes:  # the old command too, for what changes in effect: both at once
            new, old = await asyncio.gather(host_resolution(host, server, list(resolvable_args(plan.new))),
                                            host_resolution(host, server, list(resolvable_args(plan.old))))
        else:
            new = old = await host_resolution(host, server, list(resolvable_args(plan.new)))
        return judged_by_host(plan, new, old)
    except HostResolveError as exc:
        why = f"{plan.version_note}; the host's own SGLang could not resolve here ({exc}): judged by release rules"
        return dataclasses.replace(plan, version_note=why)


def judged_by_host(plan: RelaunchPlan, new_dump: Mapping[str, Any], old_dump: Mapping[str, Any] | None
                   ) -> RelaunchPlan:
    """`plan` with its verdict from the host's own SGLang (core.launch.hostresolve: a source build is judged
    by its own argparse and resolution, never by the nearest release's rules). HostResolveError when the
    host could not say (the caller keeps the replayed verdict and says why)."""
    device = str((plan.resolution.requested or {}).get("device") or "cuda")
    res = judge(plan.resolution, new_dump, device=device)
    before = old_dump.get("effective") if old_dump and old_dump.get("outcome") == "ok" else None
    eff_changes: list[tuple[str, object, object]] = []
    if res.effective is not None and isinstance(before, dict):
        for dest in sorted(set(before) | set(res.effective)):
            a, b = before.get(dest), res.effective.get(dest)
            if a != b:
                eff_changes.append((dest, a, b))
    note = f"{plan.version_note}; {res.catalogue.why}" if res.catalogue else plan.version_note
    return dataclasses.replace(plan, resolution=res, effective_changes=tuple(eff_changes), version_note=note,
                               catalogue=res.catalogue)
