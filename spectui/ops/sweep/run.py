"""`spectui sweep`: every distinct valid config of a grid relaunched (ops.relaunch.run: the same checks, the same
rollback, the launch history), warmed up and benched (ops.bench.run: bench.jsonl), with the rules reading the new
log the whole time; at the end the original command (or the best with `apply_best`) runs again.

A config ends early, `failed` with its cause, when its launch fails (the relaunch rolls back to what ran
before), when its server crashes, or when the rules raise an error-severity diagnosis of a fatal kind while
it is measured (silent overrides, low accept length, slower than baseline and capacity are recorded in
`diagnoses` but do not end a measurement: they are what a sweep measures). The sweep then goes on.
`interrupt()` (Ctrl-C) stops at once: a launch under way is cancelled (its half-started server, found by its
command line, is what the restore then stops), a bench under way is abandoned, nothing more is launched or
benched (that config is not recorded: a resume runs it again), and the original command (or the best so far)
is restored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.errors import SpectuiError
from spectui.load import BenchConfig, PromptSet
from spectui.ops.bench import run as bench
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.outcome import Progress, RelaunchOptions
from spectui.ops.relaunch.plan import Edits
from spectui.ops.relaunch.run import KnownCommand, execute, prepare, prepare_start
from spectui.ops.sweep.baseline import apply as apply_baseline
from spectui.ops.sweep.baseline import restore_spec
from spectui.ops.sweep.journal import Journal
from spectui.ops.sweep.plan import ABSENT, Axis, PlannedConfig, SweepPlan, edits_for, plan_sweep
from spectui.ops.sweep.plan import workload_of as _workload
from spectui.ops.sweep.results import ADVISORY, best_index, cause_of, check_resume, summary  # noqa: F401
from spectui.ops.sweep.results import reason_of as _reason

CRASH_GRACE_S = 2.0  # after a bench that lost requests: time for the crash lines to reach the rules
EXIT_WAIT_S = 10.0  # after the log said it crashed: time for the process to exit


@dataclass(frozen=True)
class SweepOptions:
    bench: BenchConfig
    prompts: PromptSet
    baseline_tps: float | None = None
    apply_best: bool = False
    relaunch: RelaunchOptions = field(default_factory=RelaunchOptions)
    history_path: Path | str | None = None
    pid: int | None = None
    server_port: int | None = None  # picks the server listening there when pid is None
    measure_baseline: bool = False  # --baseline: no-speculation baseline measured once, before the grid


class _Interrupted(Exception):
    """A config's relaunch cancelled by Ctrl-C."""


@dataclass
class _Current:
    """What runs now: its pid, command and environment, and which config it is ("original" or an index)."""

    pid: int | None
    argv: tuple[str, ...]
    env: Mapping[str, str]
    config: int | str | None  # None: nothing healthy runs
    log: str | None = None  # its log: a start after a crash puts the new log beside it
    gone: bool = False  # it crashed: nothing runs, the next launch starts this known command (no stop)


def _axis_text(values: Mapping[str, str | None]) -> str:
    return " ".join(f"{k}={ABSENT if v is None else v}" for k, v in values.items())


class Sweep:
    def __init__(self, host: Any, axes: Sequence[Axis], options: SweepOptions, journal: Journal, *,
                 on_note: Callable[[str], None] | None = None,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.host, self.axes, self.opt, self.journal = host, list(axes), options, journal
        self.note = on_note or (lambda _m: None)
        self.event = on_event or (lambda _k, _d: None)  # ("config", {index, status, entry?}), ("progress", ...)
        self.baseline: dict[str, Any] | None = None
        self.baseline_error: str | None = None
        self.plan: SweepPlan | None = None
        self.current: _Current | None = None
        self.launches = 0
        self.interrupted = False
        self._finishing = False
        self._bench_task: asyncio.Task[Any] | None = None
        self._launch_task: asyncio.Task[Any] | None = None  # a config's relaunch under way (Ctrl-C cancels it)
        self.history = HistoryStore(options.history_path)

    # ---- planning ------------------------------------------------------------------------------------

    async def make_plan(self) -> SweepPlan:
        from spectui.sources.discover import server_api_key
        from spectui.sources.http import server_version
        from spectui.sources.target import pick_one

        # --pid, else --server-port, else the host's only server; several: listed (pid, port, model, algorithm)
        pid = (await pick_one(self.host, self.opt.pid, self.opt.server_port)).pid
        base = await prepare(self.host, Edits(), pid=pid)
        s = base.server
        reported = None if s.port is None else await server_version(self.host, s.port, s.host_addr,
                                                                    server_api_key(s.argv))
        from spectui.ops.relaunch.hostjudge import judge_on_host
        from spectui.ops.sweep.plan import grid_plans

        plans = grid_plans(s, self.axes, host_name=self.host.name, server_version=reported)
        plans = [await judge_on_host(self.host, s, p, reported) for p in plans]  # a source build: its own SGLang
        self.plan = plan_sweep(s, self.axes, host_name=self.host.name, server_version=reported, plans=plans)
        self.current = _Current(s.pid, tuple(s.argv), dict(s.env), "original")
        return self.plan

    def interrupt(self) -> None:
        """Ctrl-C: stop after the step under way; a bench under way is abandoned."""
        if self._finishing:
            self.note("interrupt: restoring the command to keep running; wait for it to be healthy")
            return
        self.interrupted = True
        self.note("interrupt: stopping now (nothing more is launched or benched), then restoring")
        for task in (self._launch_task, self._bench_task):
            if task is not None and not task.done():
                task.cancel()

    # ---- the run ---------------------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        plan = self.plan or await self.make_plan()
        header = self.journal.header
        original = dict(header["original"]) if header else dict(plan.original)
        if header is None:
            self.journal.start({"host": self.host.name, "grid": [a.to_json() for a in self.axes],
                                "original": original, "sglang_version": plan.version,
                                "workload": _workload(self.opt)})
        entries: list[dict[str, Any]] = [c.to_json() for c in plan.configs]
        for idx, done in self.journal.done.items():
            if idx < len(plan.configs) and done.get("key") == plan.configs[idx].key:
                entries[idx] = {k: v for k, v in done.items() if k not in ("type", "key")}
        todo = [c for c in plan.to_launch if entries[c.index]["status"] == "pending"]
        skipped = len(plan.to_launch) - len(todo)
        if skipped:
            self.note(f"resume: {skipped} config(s) already done in {self.journal.path}")
        if self.journal.baseline is not None:
            self.baseline = self.journal.baseline
            self.note(f"baseline from the journal: {self.baseline.get('output_tokens_per_s')} tok/s")
        elif self.opt.measure_baseline and not self.interrupted:
            await self._measure_baseline()
        for n, cfg in enumerate(todo, 1):
            if self.interrupted or self.current is None:  # None: no command known to start from
                break
            self.note(f"[{n}/{len(todo)}] #{cfg.index} {_axis_text(cfg.set)}")
            self.event("config", {"index": cfg.index, "status": "launching"})
            entry = await self._one(cfg)
            if entry is None:  # interrupted during its bench: not recorded
                self.event("config", {"index": cfg.index, "status": "pending"})
                break
            entries[cfg.index] = entry
            self.journal.add({**entry, "key": cfg.key})
            self.event("config", {"index": cfg.index, "status": entry["status"], "entry": entry})
            self.note(f"  #{cfg.index} {entry['status']}" + (f": {entry['reason']}" if entry.get("reason") else ""))
        for e in entries:
            if e["status"] == "duplicate" and e.get("same_as") is not None:
                e["measured_as"] = entries[e["same_as"]]["status"]
        applied, restore = await self._finish(entries, original)
        self.journal.end(applied=applied, launches=self.launches, interrupted=self.interrupted)
        extra = {"baseline_error": self.baseline_error} if self.baseline_error else {}
        return summary(entries, launches=self.launches, applied=applied, baseline_tps=self.opt.baseline_tps,
                       baseline=self.baseline, **extra, restore=restore, interrupted=self.interrupted, journal=str(self.journal.path),
                       sglang_version=plan.version, grid=[a.to_json() for a in self.axes])

    async def _relaunch(self, values: Mapping[str, str | None]) -> Any:
        cur = self.current
        assert cur is not None
        edits = restore_spec(edits_for(values, cur.argv, cur.env), self._original_argv(), cur.argv)
        if cur.pid is None or cur.gone or await self._dead():  # nothing runs (a crash …): start its command
            assert self.plan is not None
            rplan = await prepare_start(self.host, self._known(cur), edits, server_version=self.plan.version)
        else:
            rplan = await prepare(self.host, edits, pid=cur.pid)

        def progress(p: Progress) -> None:
            self.note(f"  [{p.step}] {'rollback: ' if p.rollback else ''}{p.message}")

        launch = execute(self.host, rplan, self.opt.relaunch, on_progress=progress, history=self.history)
        if self._finishing:  # the restore itself is never cancelled
            result = await launch
        else:
            self._launch_task = asyncio.ensure_future(launch)
            try:
                result = await self._launch_task
            except asyncio.CancelledError:
                if not self.interrupted:
                    raise
                await self._after_cancelled(rplan, cur)
                raise _Interrupted from None
            finally:
                self._launch_task = None
        if result.healthy:
            self.current = _Current(result.new.pid, tuple(rplan.new.argv), dict(rplan.new_env), None, result.new.log)
        elif result.rolled_back:
            assert result.rollback is not None
            self.current = _Current(result.rollback.pid, cur.argv, cur.env, cur.config, result.rollback.log)
        else:
            self.current = _Current(None, cur.argv, cur.env, None, result.new.log or cur.log)
        return rplan, result

    async def _after_cancelled(self, rplan: Any, cur: _Current) -> None:
        """A relaunch cancelled half-way (Ctrl-C): what runs now — the new command started but not yet healthy,
        the old one still untouched, or nothing — becomes `current`, so the restore stops the right process."""
        from spectui.sources.discover import discover

        try:
            servers = await discover(self.host)
        except SpectuiError:
            servers = []
        # the pid the cancelled relaunch started, as its history record says (exact), else by its command line
        rec = next((r for r in reversed(self.history.read(host=self.host.name)) if r.log == rplan.log_path), None)
        started = rec.new_pid if rec is not None else None
        new = [p for p in servers if p.pid == started] or [
            p for p in servers if tuple(p.argv) == tuple(rplan.new.argv) and p.pid != cur.pid]
        old = [p for p in servers if p.pid == cur.pid and tuple(p.argv) == tuple(cur.argv)]
        if new:
            self.note(f"interrupt: the launch under way (pid {new[0].pid}) is stopped by the restore")
            self.current = _Current(new[0].pid, tuple(rplan.new.argv), dict(rplan.new_env), None, rplan.log_path)
        elif not old:
            self.current = _Current(None, cur.argv, cur.env, None, cur.log, gone=True)

    def _known(self, cur: _Current) -> KnownCommand:
        """What the last server ran, to start again where no server runs (cwd, port: the original's)."""
        assert self.plan is not None
        s = self.plan.server
        return KnownCommand(cur.argv, cur.env, s.cwd, cur.log or s.log_path, s.port, s.host_addr,
                            None if cur.pid is None else cur.pid, s.program, uid=s.uid, user=s.user)

    async def _one(self, cfg: PlannedConfig) -> dict[str, Any] | None:
        entry = cfg.to_json()
        try:
            rplan, result = await self._relaunch(cfg.set)
        except _Interrupted:  # Ctrl-C during its launch: not recorded, not benched
            return None
        except SpectuiError as exc:  # refused before anything changed (the old server runs untouched)
            return {**entry, "status": "failed", "reason": f"relaunch refused: {exc}"}
        self.launches += 1
        if self.interrupted:  # Ctrl-C as its launch ended: restore now, do not bench it
            return None
        entry["launch"] = {"history_id": result.history_id, "pid": result.new.pid, "log": result.new.log}
        if not result.healthy:
            diags = [d.to_json() for d in result.new.diagnoses]
            cause = cause_of(diags)
            reason = _reason(cause) if cause else (result.new.error or "the launch failed")
            return {**entry, "status": "failed", "reason": reason, "diagnoses": diags,
                    "rolled_back": result.rolled_back}
        assert self.current is not None
        self.current.config = cfg.index
        self.event("config", {"index": cfg.index, "status": "benching"})
        return await self._measure(entry, rplan, result)

    def _original_argv(self) -> tuple[str, ...]:
        return tuple(self.plan.server.argv) if self.plan is not None else ()

    async def _measure_baseline(self) -> None:
        from spectui.ops.sweep import baseline as sweep_baseline

        cur = self.current
        assert cur is not None and self.plan is not None
        self.note("baseline: bench, relaunch without speculation, bench, restore")
        self.event("baseline", {"status": "measuring"})

        def started(task: asyncio.Task[Any]) -> None:
            self._bench_task = task

        try:
            got = await sweep_baseline.measure(
                self.host, self.opt.bench, self.opt.prompts, pid=cur.pid, history_path=self.opt.history_path,
                options=self.opt.relaunch, note=self.note, started=started,
                on_phase=lambda p: self.event("baseline", {"status": p}))
        finally:
            self._bench_task = None
        self.baseline, self.baseline_error = got.baseline, got.error
        self.interrupted = self.interrupted or got.interrupted
        if got.baseline is not None:
            self.journal.add_baseline(got.baseline)
            self.note(f"baseline: {got.baseline.get('output_tokens_per_s')} tok/s without speculation")
        elif got.error:
            self.note(got.error)
        self.event("baseline", {"status": "ok" if got.baseline else "failed", "baseline": got.baseline,
                                "error": got.error})
        try:  # what runs now: the restored original (its pid), else whatever listens on the port
            found = await bench.find_server(self.host, got.pid, None if got.pid else self.plan.server.port)
        except SpectuiError:
            found = None
        if found is None:
            self.current = None
            return
        same = sweep_baseline.same_command(found.argv, self.plan.server.argv)
        self.current = _Current(found.pid, tuple(found.argv), dict(found.env), "original" if same else None)

    async def _measure(self, entry: dict[str, Any], rplan: Any, result: Any) -> dict[str, Any] | None:
        from spectui.sources.follow import follow, make_engine

        diags: list[dict[str, Any]] = []
        engine = make_engine(tuple(rplan.new.argv), rplan.version)
        ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def watch() -> None:
            async for ev in follow(self.host, result.new.log, from_start=True, engine=engine):
                if ev["type"] == "diagnosis":
                    d = {k: v for k, v in ev.items() if k != "type"}
                    diags.append(d)
                    if cause_of([d]) is not None and not ended.done():
                        ended.set_result("diagnosis")
                elif ev["type"] == "phase" and ev["phase"] in ("crashed", "stopped") and not ended.done():
                    ended.set_result(ev["phase"])

        self.note("  warming up and benching")
        bplan = bench.BenchPlan(self.opt.bench, self.opt.prompts, pid=result.new.pid,
                                baseline_tps=self.opt.baseline_tps, history_path=self.opt.history_path)
        watcher = asyncio.create_task(watch())
        idx = entry["index"]
        self._bench_task = asyncio.create_task(bench.run(
            self.host, bplan, on_progress=lambda p: self.event("progress", {"index": idx, "progress": p})))
        out: dict[str, Any] | None = None
        error: str | None = None
        try:
            await asyncio.wait({self._bench_task, ended}, return_when=asyncio.FIRST_COMPLETED)
            if self._bench_task.done():
                try:
                    out = self._bench_task.result()
                except asyncio.CancelledError:
                    if self.interrupted:
                        return None
                    raise
                except SpectuiError as exc:
                    error = f"bench failed: {exc}"
                lost = out is None or out["requests"]["failed"] > 0
                if lost and not ended.done():  # the server may have died: let its last lines be read
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(ended), CRASH_GRACE_S)
            else:
                self._bench_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, SpectuiError):
                    await self._bench_task
        finally:
            self._bench_task = None
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        entry["diagnoses"] = diags
        if out is not None:
            apply_baseline(out, self.baseline)
        entry["bench"] = out
        if ended.done():
            cause = cause_of(diags)
            how = ended.result()
            entry["status"] = "failed"
            entry["reason"] = _reason(cause) if cause else f"the server {how} while it was measured"
            if how in ("crashed", "stopped") or (out is None):
                assert self.current is not None
                if await self._dead(wait_s=EXIT_WAIT_S if how != "diagnosis" else 0.0):  # next: prepare_start
                    self.current.config, self.current.gone = None, True
            return entry
        if error or out is None or not out["requests"]["ok"]:
            entry["status"], entry["reason"] = "failed", error or "no request succeeded"
            return entry
        entry["status"] = "ok"
        return entry

    async def _dead(self, wait_s: float = 0.0) -> bool:
        """Whether the current server is gone (waiting up to `wait_s` for a crashing one to exit)."""
        from spectui.ops import procs

        cur = self.current
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            if cur is None or cur.pid is None or await procs.read_cmdline(self.host, cur.pid) is None:
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.25)

    # ---- the end ---------------------------------------------------------------------------------------

    async def _finish(self, entries: list[dict[str, Any]], original: Mapping[str, str | None]) -> tuple[str, dict[str, Any]]:
        self._finishing = True
        best = best_index(entries) if self.opt.apply_best else None
        applied = "best" if best is not None else "original"
        want: int | str = best if best is not None else "original"
        values = (_values(entries[best]["set"]) if best is not None else dict(original))
        cur = self.current
        if cur is None:
            msg = "no server is left and no command is known to start (see the notes above); start it again by hand"
            self.note(msg)
            return applied, {"relaunched": False, "healthy": False, "pid": None, "message": msg}
        if cur.config == want and not cur.gone and cur.pid is not None:
            self.note(f"end: the {applied} command already runs (pid {cur.pid})")
            return applied, {"relaunched": False, "healthy": True, "pid": cur.pid, "message": "already running"}
        self.note(f"end: relaunching the {applied} command" + (f" (#{best})" if best is not None else ""))
        try:
            _rplan, result = await self._relaunch(values)
        except SpectuiError as exc:
            return applied, {"relaunched": False, "healthy": False, "pid": cur.pid, "message": str(exc)}
        if result.healthy:
            assert self.current is not None
            self.current.config = want
        return applied, {"relaunched": True, "healthy": result.healthy, "pid": result.new.pid,
                         "log": result.new.log, "message": result.message, "history_id": result.history_id}


def _values(shown: Mapping[str, str]) -> dict[str, str | None]:
    return {k: None if v == ABSENT else v for k, v in shown.items()}
