"""The relaunch engine: find the server and plan (prepare), then stop its process group, start the edited
command detached, wait for health, roll back on failure and record history (execute). Progress goes to a
callback so the CLI prints it and the TUI's relaunch screen shows it.

Where no server runs (the last one crashed), `start_known` (prepare_start + execute) starts a known
command — argv, environment, cwd, log folder — with the same checks, health wait and history record, and
no stop step.

One relaunch per server at a time: `execute` holds a lock for the host + server (this process: a
registry; other spectui processes: an flock beside the history file) from its first check to its last
record, and refuses a second execute with a clear message, changing nothing. The history record is
never left "running": any exception or cancellation after it is written finalizes it as failed with
the reason."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from spectui.errors import RelaunchError
from spectui.ops.history import (
    HistoryStore,
    LaunchRecord,
    launch_env_record,
    masked_diff,
    masked_env_diff,
    now_iso,
)
from spectui.ops.hostcmds import display_argv
from spectui.ops.relaunch.known import KnownCommand
from spectui.ops.relaunch.outcome import Attempt, Progress, RelaunchOptions, RelaunchResult, Step
from spectui.ops.relaunch.plan import Edits, RelaunchPlan, build_plan
from spectui.ops.relaunch.runner import Runner
from spectui.sources.base import ServerProcess

__all__ = ["Attempt", "KnownCommand", "Progress", "RelaunchOptions", "RelaunchResult", "Step", "execute", "prepare",
           "prepare_any", "prepare_start", "start_known"]

_HELD: dict[tuple[str, str], str] = {}  # (host, server key) -> what holds it, for the refusal message
_HELD_GUARD = threading.Lock()


def _server_key(plan: RelaunchPlan) -> str:
    """The server a relaunch acts on: its port when known (the old and the new server share it), else its pid."""
    s = plan.server
    return f"port-{s.port}" if s.port else f"pid-{s.pid}"


@contextlib.contextmanager
def relaunch_lock(plan: RelaunchPlan, lock_dir: Path) -> Iterator[None]:
    """Hold the host + server for one relaunch, or raise RelaunchError (nothing changed) when another
    relaunch of it runs in this process or in another spectui process on this machine."""
    key = (plan.host_name, _server_key(plan))
    what = f"a relaunch of pid {plan.server.pid} on {plan.host_name}"
    with _HELD_GUARD:
        if key in _HELD:
            raise RelaunchError(f"{_HELD[key]} is already running; this second relaunch was refused and nothing "
                                "was changed — wait for the first to finish, then relaunch again")
        _HELD[key] = what
    fh = None
    try:
        with contextlib.suppress(OSError):  # no writable state dir: the in-process registry still holds
            lock_dir.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{key[0]}-{key[1]}") + ".lock"
            fh = open(lock_dir / name, "a+")  # noqa: SIM115 - held for the whole relaunch
        if fh is not None:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                fh = None
                raise RelaunchError(f"{what} is already running in another spectui process (lock "
                                    f"{lock_dir / name}); this relaunch was refused and nothing was changed — "
                                    "wait for it to finish, then relaunch again") from None
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
        yield
    finally:
        if fh is not None:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()
        with _HELD_GUARD:
            _HELD.pop(key, None)


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
    from spectui.ops.relaunch.hostjudge import judge_on_host

    return await judge_on_host(host, server, plan, version)


async def _server_version(host: Any, server: Any) -> str | None:
    """What the running server says it is (/server_info "version"), or None (then the newest bundled)."""
    from spectui.sources.discover import server_api_key
    from spectui.sources.http import server_version

    return None if server.port is None else await server_version(host, server.port, server.host_addr,
                                                                 server_api_key(server.argv))


async def prepare_start(host: Any, known: KnownCommand, edits: Edits, *, server_version: str | None = None,
                        now: datetime | None = None) -> RelaunchPlan:
    """The plan to start `known` with `edits` where no server runs (`execute` then carries it out without a
    stop step). `server_version`: the release the last server reported (it cannot be asked now). Changes
    nothing on the host."""
    from spectui.sources.hostflags_run import server_catalogue

    pid = known.pid if known.pid is not None and known.pid > 1 else 0
    server = ServerProcess(pid=pid, pgid=pid, argv=tuple(known.argv), env=dict(known.env), cwd=known.cwd,
                           log_path=known.log_path, port=known.port, host_addr=known.host_addr,
                           program=known.program, uid=known.uid, user=known.user)
    catalogue = await server_catalogue(host, server, server_version)
    taken = [known.log_path] if known.log_path else []
    kw: dict[str, Any] = {"host_name": host.name, "now": now or datetime.now(), "server_version": server_version,
                          "catalogue": catalogue}
    plan = build_plan(server, edits, taken_logs=taken, **kw)
    while await host.stat(plan.log_path) is not None:
        taken.append(plan.log_path)
        plan = build_plan(server, edits, taken_logs=taken, **kw)
    note = "; ".join(x for x in (f"known from {known.source}" if known.source else "", known.env_note) if x)
    from spectui.ops.relaunch.hostjudge import judge_on_host

    plan = await judge_on_host(host, server, plan, server_version)
    return dataclasses.replace(plan, from_known=True, known_note=note)


async def prepare_any(host: Any, edits: Edits, *, pid: int | None = None, log: str | None = None,
                      port: int | None = None, known: KnownCommand | None = None,
                      history: HistoryStore | None = None, server_version: str | None = None) -> RelaunchPlan:
    """The plan for the server named by `pid` / `log` / `port` (or the host's only one), alive or not: a
    live server is relaunched (prepare); one that is gone — no such pid, no live process writing `log`, no
    server left on the host — is started again from what is known of it (`known`, else ops.relaunch.known: the
    history, the log), without a stop step. DiscoveryError when nothing runs and nothing is known."""
    from spectui.errors import DiscoveryError
    from spectui.ops.relaunch.known import find_known
    from spectui.sources.discover import SeveralServers, discover

    servers = await discover(host)
    if pid is None and port is not None:
        on_port = [s for s in servers if s.port == port]
        if len(on_port) == 1:
            pid = on_port[0].pid
        elif not on_port:
            pid = -1  # nothing listens there: what is known of the server that did
    if pid is None and log is not None:
        writers = [s for s in servers if log in (s.log_path, s.stderr_path)]
        if len(writers) == 1:
            pid = writers[0].pid
    alive = pid is not None and any(s.pid == pid for s in servers)
    if pid is None and log is None and len(servers) > 1:
        from spectui.sources.target import several_message

        raise SeveralServers(several_message(host.name, servers), servers)
    if alive or (pid is None and log is None and servers):
        return await prepare(host, edits, pid=pid, now=None)
    gone = None if pid is None or pid < 0 else pid
    if known is None or (gone is not None and known.pid not in (None, gone)):
        known = await find_known(host, pid=gone, log=log, history=history)
        if known is not None and port is not None and known.port != port:
            known = None  # the host's last server ran on another port: not this one
    if known is None:
        what = (f"pid {gone}" if gone is not None else f"the server that wrote {log}" if log
                else f"the server on port {port}" if port else "a server")
        try:
            if pid is not None and pid > 0:
                await prepare(host, edits, pid=pid)  # its own message: "no process 123" / "not an SGLang server"
        except SeveralServers:
            raise
        except DiscoveryError as exc:
            raise DiscoveryError(f"{exc}; and nothing is known of {what} to start it again (no launch history "
                                 "record, no launch or server_args= line in its log)") from None
        now = (f"no SGLang server writes {log}" if log else f"no SGLang server listens on port {port}" if port
               else "no SGLang server runs")
        raise DiscoveryError(f"{now} on {host.name}, and nothing is known of {what} to start it again (no launch "
                             "history record, no launch or server_args= line in its log)")
    return await prepare_start(host, known, edits, server_version=server_version or known.sglang_version)


async def start_known(host: Any, known: KnownCommand, edits: Edits | None = None, options: RelaunchOptions | None = None,
                      *, server_version: str | None = None, on_progress: Callable[[Progress], None] | None = None,
                      history: HistoryStore | None = None, rules_dirs: Sequence[Any] = ()) -> RelaunchResult:
    """Start a known command on a host where no server runs: prepare_start + execute. The same safety as a
    relaunch (port free, GPU released, detached start with setsid, a new log beside the old, health while
    the rules read the log, a history record) without the stop step. Raises RelaunchError (nothing changed)
    when a check fails — the last server still runs, the port stays taken, its GPU memory stays held."""
    plan = await prepare_start(host, known, edits or Edits(), server_version=server_version)
    return await execute(host, plan, options, on_progress=on_progress, history=history, rules_dirs=rules_dirs)


async def execute(
    host: Any,
    plan: RelaunchPlan,
    options: RelaunchOptions | None = None,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    history: HistoryStore | None = None,
    rules_dirs: Sequence[Any] = (),
) -> RelaunchResult:
    """Carry out the plan (a plan from prepare_start: start it, no stop). Raises RelaunchError (host
    unchanged) when a check before the stop (or the start) fails or another relaunch of the same server is
    running; after that, every failure ends in a RelaunchResult saying what runs now."""
    store = history or HistoryStore()
    with relaunch_lock(plan, store.path.parent / "locks"):
        return await _execute_locked(host, plan, options, on_progress, store, rules_dirs)


async def _execute_locked(host: Any, plan: RelaunchPlan, options: RelaunchOptions | None,
                          on_progress: Callable[[Progress], None] | None, store: HistoryStore,
                          rules_dirs: Sequence[Any]) -> RelaunchResult:
    runner = Runner(host, plan, options or RelaunchOptions(), on_progress, rules_dirs)
    await (runner.preflight_known() if plan.from_known else runner.preflight())
    launch_id = uuid.uuid4().hex[:12]
    store.append(LaunchRecord(
        id=launch_id, time=now_iso(), host=plan.host_name, old_pid=plan.server.pid,
        old_command=display_argv(plan.old.argv), command=display_argv(plan.new.argv),
        diff=masked_diff(plan.changes),  # type: ignore[arg-type]
        env_diff=masked_env_diff(plan.env_changes),  # type: ignore[arg-type]
        sglang_version=plan.version, verdict=plan.resolution.outcome, forced=plan.needs_force,
        log=plan.log_path, from_known=plan.from_known, cwd=plan.server.cwd or None,
        env=launch_env_record(plan.new_env),
        owner_uid=runner.run_as[0] if runner.run_as else None, owner_user=runner.run_as[1] if runner.run_as else "",
    ))
    try:
        result = await (runner.run_known() if plan.from_known else runner.run())
    except RelaunchError as exc:  # refused at the stop itself: the old server runs untouched
        store.update(launch_id, outcome="failed", error=str(exc), ended=now_iso())
        raise
    except (Exception, asyncio.CancelledError) as exc:  # never leave the record "running"
        store.update(launch_id, outcome="failed", error=_interrupted(runner, exc),
                     new_pid=runner.started_pid, ended=now_iso())
        raise
    store.update(
        launch_id, new_pid=result.new.pid, outcome=_outcome(result), error=result.new.error,
        rollback_pid=result.rollback.pid if result.rollback else None,
        rollback_log=result.rollback.log if result.rollback else None,
        accept_len=result.new.accept_len, gen_tokens_per_s=result.new.gen_tokens_per_s,
        diagnoses=[f"{d.rule}: {d.title}" for d in result.new.diagnoses], ended=now_iso(),
    )
    return RelaunchResult(plan, result.new, result.rollback, result.message, launch_id, result.steps)


def _interrupted(runner: Runner, exc: BaseException) -> str:
    """The history's reason for a relaunch that ended by an exception or a cancellation half-way."""
    how = "cancelled" if isinstance(exc, asyncio.CancelledError) else f"interrupted by an error ({type(exc).__name__}: {exc})"
    last = runner.steps[-1] if runner.steps else None
    during = f" while {last.step.value.replace('_', ' ')}" + (" (rollback)" if last.rollback else "") if last else ""
    if runner.started_pid is not None:
        state = f"the new server was started as pid {runner.started_pid}; its health is unknown"
    elif runner.plan.from_known:
        state = "no server was running and nothing was started"
    elif any(p.step.value == "stopping" for p in runner.steps):
        state = f"the old server (pid {runner.plan.server.pid}) may be stopped and nothing started"
    else:
        state = "the old server was not stopped"
    return f"relaunch {how}{during}: {state} — check the host with `spectui connect {runner.plan.host_name}`"


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
