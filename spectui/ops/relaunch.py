"""The relaunch engine: find the server and plan (prepare), then stop its process group, start the edited
command detached, wait for health, roll back on failure and record history (execute). Progress goes to a
callback so the CLI prints it and the TUI's relaunch screen shows it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Any

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore, LaunchRecord, now_iso
from spectui.ops.hostcmds import display_argv
from spectui.ops.outcome import Attempt, Progress, RelaunchOptions, RelaunchResult, Step
from spectui.ops.plan import Edits, RelaunchPlan, build_plan
from spectui.ops.runner import Runner

__all__ = ["Attempt", "Progress", "RelaunchOptions", "RelaunchResult", "Step"]




async def prepare(
    host: Any,
    edits: Edits,
    *,
    pid: int | None = None,
    log: str | None = None,
    now: datetime | None = None,
) -> RelaunchPlan:
    """Find the server (the only one, `pid`, or the one writing `log`) and compute the plan. Changes
    nothing on the host."""
    from spectui.sources.discover import discover, pick_server

    if pid is None and log is not None:
        writers = [s for s in await discover(host) if log in (s.log_path, s.stderr_path)]
        if len(writers) == 1:
            pid = writers[0].pid
    server = await pick_server(host, pid)
    from spectui.sources.hostflags_run import server_catalogue

    version = await _server_version(host, server)
    catalogue = await server_catalogue(host, server, version)  # the host's own flags for a release not shipped
    taken = [server.log_path] if server.log_path else []
    now = now or datetime.now()
    kw: dict[str, Any] = {"host_name": host.name, "now": now, "server_version": version, "catalogue": catalogue}
    plan = build_plan(server, edits, taken_logs=taken, **kw)
    # The new log must be a new file: step past names already on the host (two relaunches in a second).
    while await host.stat(plan.log_path) is not None:
        taken.append(plan.log_path)
        plan = build_plan(server, edits, taken_logs=taken, **kw)
    return plan


async def _server_version(host: Any, server: Any) -> str | None:
    """What the running server says it is (/server_info "version"), or None (then the newest bundled)."""
    from spectui.sources.http import server_version

    return None if server.port is None else await server_version(host, server.port, server.host_addr)


async def execute(
    host: Any,
    plan: RelaunchPlan,
    options: RelaunchOptions | None = None,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    history: HistoryStore | None = None,
    rules_dirs: Sequence[Any] = (),
) -> RelaunchResult:
    """Carry out the plan. Raises RelaunchError (host unchanged) when a check before the stop fails;
    after the stop, every failure ends in a RelaunchResult saying what runs now."""
    runner = Runner(host, plan, options or RelaunchOptions(), on_progress, rules_dirs)
    await runner.preflight()
    store = history or HistoryStore()
    launch_id = uuid.uuid4().hex[:12]
    store.append(LaunchRecord(
        id=launch_id, time=now_iso(), host=plan.host_name, old_pid=plan.server.pid,
        old_command=display_argv(plan.old.argv), command=display_argv(plan.new.argv),
        diff=[{"flag": c.flag, "old": c.old, "new": c.new} for c in plan.changes],  # type: ignore[misc]
        sglang_version=plan.version, verdict=plan.resolution.outcome, forced=plan.needs_force,
        log=plan.log_path,
    ))
    try:
        result = await runner.run()
    except RelaunchError as exc:  # refused at the stop itself: the old server runs untouched
        store.update(launch_id, outcome="failed", error=str(exc), ended=now_iso())
        raise
    store.update(
        launch_id, new_pid=result.new.pid, outcome=_outcome(result), error=result.new.error,
        rollback_pid=result.rollback.pid if result.rollback else None,
        rollback_log=result.rollback.log if result.rollback else None,
        accept_len=result.new.accept_len, gen_tokens_per_s=result.new.gen_tokens_per_s,
        diagnoses=[f"{d.rule}: {d.title}" for d in result.new.diagnoses], ended=now_iso(),
    )
    return RelaunchResult(plan, result.new, result.rollback, result.message, launch_id, result.steps)


def _outcome(result: RelaunchResult) -> str:
    if result.new.healthy:
        return "healthy"
    if result.rollback is None:
        return "failed"
    return "rolled_back" if result.rollback.healthy else "rollback_failed"


async def relaunch_events(
    host: Any, plan: RelaunchPlan, options: RelaunchOptions | None = None, **kw: Any
) -> AsyncIterator[Progress | RelaunchResult | RelaunchError]:
    """The same as `execute`, as an async iterator: Progress items, then the RelaunchResult (or the
    RelaunchError that stopped it before anything changed) last."""
    import asyncio

    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def work() -> None:
        try:
            queue.put_nowait(await execute(host, plan, options, on_progress=queue.put_nowait, **kw))
        except RelaunchError as exc:
            queue.put_nowait(exc)

    task = asyncio.create_task(work())
    try:
        while True:
            item = await queue.get()
            yield item
            if not isinstance(item, Progress):
                return
    finally:
        if not task.done():
            task.cancel()
