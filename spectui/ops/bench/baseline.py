"""`spectui bench --baseline`: measure the speculative server, relaunch the same command without speculation
(ops.relaunch.run with its safety: every --speculative-* flag unset, the rest and the environment kept), wait
healthy, run the same workload, then restore the speculative command and check it is healthy and speculating
again. Both results go to bench.jsonl; the speculative one carries `baseline.source = "measured"` and the
speedup on aggregate tok/s and per-request speed at the same concurrency.

An interruption (the task cancelled: Ctrl-C) or a failure after the first relaunch still restores the
speculative command: a relaunch in progress is finished first (never left half-done), then the restore runs;
the caller then gets BaselineInterrupted / the failure, with what runs on the host in the message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from spectui.errors import SpectuiError, UsageError
from spectui.load import Progress
from spectui.ops.bench.run import BenchPlan, Server, measure, record, speedup
from spectui.sources.base import Host

T = TypeVar("T")
SPEC_PREFIX = "--speculative-"


class BaselineInterrupted(SpectuiError):
    exit_code = 130


def speculative_flags(argv: list[str]) -> dict[str, str | None]:
    """Every --speculative-* flag of the command as typed, flag -> value (None: a flag without one)."""
    from spectui.core.launch import flag_values, parse_command

    values = flag_values(parse_command(argv))
    return {f: (v if v != "" else None) for f, v in values.items() if f.startswith(SPEC_PREFIX)}


async def _through(aw: Awaitable[T], interrupted: list[bool]) -> T:
    """Await `aw` to its end even when this task is cancelled meanwhile (noted in `interrupted`)."""
    task = asyncio.ensure_future(aw)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done() and task.cancelled():
                raise
            interrupted[0] = True
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()


def _say(on_step: Callable[[str], None] | None, text: str) -> None:
    if on_step is not None:
        on_step(text)


async def _relaunch(host: Host, pid: int, edits: Any, interrupted: list[bool],
                    on_step: Callable[[str], None] | None, what: str, options: Any) -> Any:
    from spectui.ops.relaunch.run import execute, prepare

    plan = await _through(prepare(host, edits, pid=pid), interrupted)
    _say(on_step, f"{what}: {plan.new.render()[:200]}")
    result = await _through(execute(host, plan, options,
                                    on_progress=lambda p: _say(on_step, f"{what}: {p.step.value} {p.message}")),
                            interrupted)
    return plan, result


async def _speculating(host: Host, port: int, addr: str, api_key: str | None) -> str | None:
    from spectui.errors import ProbeError
    from spectui.sources.http import ServerProbe

    probe = ServerProbe(host, port, addr, timeout=10.0, api_key=api_key)
    await probe.start()
    try:
        info = await probe.server_info()
    except ProbeError:
        return None
    finally:
        await probe.close()
    algo = info.get("speculative_algorithm")
    return str(algo) if algo else None


async def preview(host: Host, plan: BenchPlan) -> str:
    """What `--baseline` will do to this server, as the operator confirms it (like `relaunch`): the two
    benches, the relaunch without speculation (its diff and verdict) and the restore. Changes nothing."""
    from spectui.ops.bench.run import find_server
    from spectui.ops.relaunch.plan import Edits
    from spectui.ops.relaunch.run import prepare

    proc = await find_server(host, plan.pid, plan.server_port)
    if proc is None:
        raise UsageError("--baseline needs the server's process to relaunch it: give --pid (or run it on a "
                         "host where spectui can see its command line)")
    flags = speculative_flags(list(proc.argv))
    if not flags:
        raise UsageError(f"pid {proc.pid} runs without --speculative-* flags: --baseline measures the speedup "
                         "of a speculative server (run plain `spectui bench` for this one)")
    off = await prepare(host, Edits(unsets=tuple(f[2:] for f in flags)), pid=proc.pid)
    c = plan.config
    size = f"{c.requests} requests" if c.requests else (f"{c.duration_s:g} s" if c.duration_s else "64 requests")
    return "\n".join([
        f"bench --baseline on {host.name}, pid {proc.pid} (port {proc.port}):",
        f"  1. bench it as it runs: {plan.prompts.name}, {size}, concurrency {c.concurrency or 'unlimited'}",
        f"  2. RESTART it without {', '.join(flags)} (requests in flight from other clients fail):",
        *("     " + line for line in off.render().splitlines()),
        "  3. bench the same workload without speculation",
        "  4. RESTART it with its original command and check it is healthy and speculating again",
    ])


def measured_baseline(base: dict[str, Any], base_id: str | None, pid: int | None) -> dict[str, Any]:
    per = base.get("per_request_tokens_per_s") or {}
    return {"output_tokens_per_s": base.get("output_tokens_per_s"),
            "per_request_tokens_per_s": {"mean": per.get("mean"), "p50": per.get("p50")},
            "concurrency": (base.get("workload") or {}).get("concurrency"),
            "source": "measured", "history_id": base_id, "pid": pid}


async def run(host: Host, plan: BenchPlan, *, on_progress: Callable[[Progress], None] | None = None,
              on_phase: Callable[[str], None] | None = None, on_step: Callable[[str], None] | None = None,
              options: Any = None) -> dict[str, Any]:
    """The speculative bench, the baseline bench and the restore; the contract's object for the
    speculative run plus `baseline_run` (the baseline's figures, pids, the restore's state)."""
    from spectui.ops.relaunch.plan import Edits
    from spectui.ops.relaunch.run import RelaunchOptions

    options = options or RelaunchOptions()
    if getattr(host, "read_only", False):
        raise UsageError(f"{host.name} is read-only: --baseline relaunches the server")
    if on_phase:
        on_phase("speculative")
    server, spec_out = await measure(host, replace(plan, baseline_tps=None), on_progress=on_progress,
                                     on_phase=on_phase)
    if server.speculative is None:
        raise UsageError("the server runs without speculation: --baseline measures the speedup of a "
                         "speculative server (run plain `spectui bench` for this one)")
    if server.proc is None:
        raise UsageError("--baseline needs the server's process to relaunch it: give --pid (or run it on a "
                         "host where spectui can see its command line)")
    flags = speculative_flags(list(server.proc.argv))
    if not flags:
        raise UsageError("the server speculates but its command has no --speculative-* flag to unset")
    interrupted = [False]
    spec_pid = server.proc.pid
    off_plan, off = None, None
    base_out: dict[str, Any] | None = None
    base_server: Server | None = None
    failure: str | None = None
    try:
        if on_phase:
            on_phase("relaunch")
        off_plan, off = await _relaunch(host, spec_pid, Edits(unsets=tuple(f[2:] for f in flags)),
                                        interrupted, on_step, "baseline", options)
        if not off.healthy:
            failure = f"the launch without speculation failed: {off.message}"
        elif not interrupted[0]:
            if on_phase:
                on_phase("baseline")
            base_plan = replace(plan, pid=off.new.pid, server_port=off_plan.port, baseline_tps=None)
            base_server, base_out = await measure(host, base_plan, on_progress=on_progress, on_phase=on_phase)
    except asyncio.CancelledError:
        interrupted[0] = True
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
    except SpectuiError as exc:
        failure = f"the baseline run failed: {exc}"
    restored: dict[str, Any] = {"pid": spec_pid, "healthy": None, "speculative_algorithm": None}
    if off is not None and off.healthy:  # something without speculation runs now: put speculation back
        if on_phase:
            on_phase("restore")
        _say(on_step, "restoring the speculative command")
        try:  # the original command line itself: its flags in their own order, not appended at the end
            on_plan, on = await _relaunch(host, off.new.pid, Edits(argv=tuple(server.proc.argv)), interrupted,
                                          on_step, "restore", options)
            algo = await _speculating(host, on_plan.port, on_plan.server.host_addr, server.api_key) \
                if on.healthy else None
            restored = {"pid": on.new.pid, "healthy": on.healthy, "speculative_algorithm": algo,
                        "launch_id": on.history_id, "message": on.message}
            if not on.healthy or not algo:
                raise SpectuiError(f"restoring the speculative command failed: {on.message}"
                                   + (" (/server_info shows no speculation)" if on.healthy else ""))
        except SpectuiError as exc:
            raise SpectuiError(f"{exc}; the server may run WITHOUT speculation now (pid {off.new.pid}): "
                               f"relaunch it with its --speculative-* flags") from None
    elif off is not None and off.rolled_back:
        restored = {"pid": off.rollback.pid, "healthy": True, "speculative_algorithm": None,
                    "message": "rolled back by the relaunch itself"}
    base_id = None
    if base_out is not None and base_server is not None:
        base_id = record(host.name, base_server, {**base_out, "history_id": None}, plan.history_path)
        base_out["history_id"] = base_id
        spec_out["baseline"] = measured_baseline(base_out, base_id, base_server.proc.pid if base_server.proc
                                                 else None)
        spec_out["speedup"] = speedup(spec_out, spec_out["baseline"])
    spec_out["server"]["now_pid"] = restored.get("pid")  # the measured one was stopped by the relaunch
    spec_out["baseline_run"] = {
        "unset": list(flags), "baseline_pid": off.new.pid if off is not None else None,
        "baseline_launch_id": off.history_id if off is not None else None, "restored": restored,
        "baseline": base_out,
    }
    spec_out["history_id"] = record(host.name, server, spec_out, plan.history_path)
    if interrupted[0]:
        raise BaselineInterrupted(f"interrupted; the speculative command runs again as pid {restored['pid']}"
                                  f" (healthy); recorded {spec_out['history_id']}")
    if failure is not None:
        raise SpectuiError(f"{failure}; the speculative command runs as pid {restored['pid']}; the "
                           f"speculative result is recorded as {spec_out['history_id']}")
    return spec_out


def known_baseline(host: str, model: str | None, history_path: Any = None) -> Any:
    """The last no-speculation bench recorded for this host (and model, when known) as a BaselineTps at
    its concurrency, or None: what the cockpit shows ×N against."""
    import posixpath

    from spectui.core.rules import BaselineTps
    from spectui.ops.bench.history import bench_records

    want = {model, posixpath.basename(model.rstrip("/"))} if model else None
    for obj in reversed(bench_records(history_path, host=host)):
        res = obj["result"]
        if (res.get("server") or {}).get("speculative"):
            continue
        if want is not None and obj.get("model") not in want:
            continue
        tps = res.get("output_tokens_per_s")
        if isinstance(tps, int | float) and tps > 0:
            return BaselineTps(tps, (res.get("workload") or {}).get("concurrency"))
    return None
