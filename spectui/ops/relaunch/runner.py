"""The steps of one relaunch on a host: checks, stop by process group, waits, detached start, health,
rollback. Used by ops.relaunch.run.execute; every failure after the stop ends with the host in the old state
(rolled back) or the new one, and a message saying which."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from spectui.errors import HostError, RelaunchError, RulesError
from spectui.ops import procs
from spectui.ops.hostcmds import ProcEntry, check_pgid, display_argv
from spectui.ops.relaunch import owner
from spectui.ops.relaunch.health import HealthOutcome, LaunchWatcher
from spectui.ops.relaunch.outcome import Attempt, Progress, RelaunchOptions, RelaunchResult, Step
from spectui.ops.relaunch.plan import RelaunchPlan, new_log_path

ROLLBACK_HEALTH_MIN_S = 900.0
_PHASE_STEPS = {"loading": Step.LOADING, "capturing": Step.CAPTURING}


# Categories that explain why a launch died; a silent override is worth reporting but is not the cause.
_FATAL = ("oom", "unrecognized-argument", "invalid-argument", "cuda-graph", "nccl", "weight-load",
          "hidden-state-mismatch", "port-in-use", "crash")


def _cause(diagnoses: Sequence[Any]) -> Any:
    """The diagnosis to name in a failed launch's one-line error: the most specific fatal one."""
    for category in _FATAL:
        for d in diagnoses:
            if d.category == category:
                return d
    return diagnoses[0] if diagnoses else None


class StepFailed(Exception):
    """A step after the stop failed; the message is for the operator."""


class Runner:
    def __init__(self, host: Any, plan: RelaunchPlan, options: RelaunchOptions,
                 on_progress: Callable[[Progress], None] | None, rules_dirs: Sequence[Any] = ()) -> None:
        self.host, self.plan, self.opt = host, plan, options
        self.on_progress = on_progress
        self.rules_dirs = rules_dirs
        self.steps: list[Progress] = []
        self.own = procs.own_pgids(host)
        self.group: list[ProcEntry] = []
        self.started_pid: int | None = None  # the new command's pid once started
        self.as_user: list[str] = []  # --as-owner: the prefix (sudo -n -u OWNER --) of the signals and starts
        self.run_as: tuple[int, str] | None = None  # (uid, user) the new server runs as, once checked

    def note(self, step: Step, message: str, *, rollback: bool = False, pid: int | None = None,
             diagnoses: tuple[Any, ...] = ()) -> None:
        p = Progress(step, message, rollback, pid, diagnoses)
        self.steps.append(p)
        if self.on_progress is not None:
            self.on_progress(p)

    # -- before anything changes: each failure here leaves the host exactly as it was ---------------

    async def preflight(self) -> None:
        s, name = self.plan.server, self.host.name
        self.note(Step.CHECKING, f"checking pid {s.pid} on {name}")
        if getattr(self.host, "read_only", False):
            raise RelaunchError(f"{name} is read-only (--read-only): relaunch would change the host; nothing was changed")
        if self.plan.needs_force and not self.opt.force:
            raise RelaunchError(f"pre-flight: {self.plan.verdict_line}; fix the flags or pass --force; nothing was changed")
        await self.check_owner()
        if not s.env:
            raise RelaunchError(
                f"the environment of pid {s.pid} could not be read (/proc/{s.pid}/environ); starting the new "
                "command without it would lose CUDA_VISIBLE_DEVICES and the rest; nothing was changed — connect "
                "as the server's user or root")
        try:
            check_pgid(s.pgid, own_pgids=self.own)
        except ValueError as exc:
            raise RelaunchError(f"{exc}; nothing was changed") from None
        cmdline = await procs.read_cmdline(self.host, s.pid)
        if cmdline is None:
            raise RelaunchError(
                f"server pid {s.pid} on {name} is gone (it exited before the relaunch); nothing was changed — "
                "check its log, start it again, then relaunch")
        if tuple(cmdline) != tuple(s.argv):
            raise RelaunchError(f"pid {s.pid} on {name} is no longer the server that was found (it now runs "
                                f"{display_argv(cmdline)[:80]!r}); nothing was changed — run relaunch again")
        all_procs = await procs.list_procs(self.host)
        foreign = procs.foreign_members(all_procs, s.pgid, s.pid)
        if foreign and not self.opt.force:
            who = "; ".join(f"pid {p.pid} {p.args[:60]!r}" for p in foreign[:3])
            raise RelaunchError(
                f"process group {s.pgid} also holds processes that are not the server ({who}): stopping the "
                "group would kill them too; nothing was changed — pass --force to stop them as well")
        probe = await procs.signal_group(self.host, s.pgid, "0", own=self.own, as_user=self.as_user)
        if not probe.delivered and probe.reason == "permission":
            raise RelaunchError(
                f"permission denied: cannot signal process group {s.pgid} on {name} (it belongs to another "
                "user); nothing was changed — connect as that user or root")
        if not probe.delivered and probe.reason == "gone":
            raise RelaunchError(f"server pid {s.pid} on {name} exited before the relaunch; nothing was changed")
        self.group = procs.alive_in_group(all_procs, s.pgid)

    async def check_owner(self, *, gone: bool = False) -> None:
        """A server is relaunched (or started again) as its owner or not at all: ops.relaunch.owner.check, whose
        prefix (--as-owner: sudo -n -u OWNER --) the signals and the start then run through."""
        found = await owner.check(self.host, self.plan.server, as_owner=self.opt.as_owner, gone=gone)
        self.as_user = list(found.as_user)
        s = self.plan.server
        self.run_as = ((s.uid, s.user) if s.uid is not None
                       else (found.acting_uid, found.acting_user) if found.acting_uid is not None else None)
        if found.note:
            self.note(Step.CHECKING, found.note)

    async def preflight_known(self) -> None:
        """Before starting a known command with no live server (the last one crashed): the same safety as a
        relaunch without the stop — the last server is gone, the port is free, its GPU memory released.
        Each failure raises RelaunchError with the host exactly as it was."""
        s, name, o = self.plan.server, self.host.name, self.opt
        last = f" (the last server was pid {s.pid})" if s.pid > 1 else ""
        self.note(Step.CHECKING, f"checking {name} before starting the known command{last}")
        if getattr(self.host, "read_only", False):
            raise RelaunchError(f"{name} is read-only (--read-only): starting a server would change the host; "
                                "nothing was changed")
        if self.plan.needs_force and not o.force:
            raise RelaunchError(f"pre-flight: {self.plan.verdict_line}; fix the flags or pass --force; nothing was changed")
        await self.check_owner(gone=True)
        if not s.env:
            raise RelaunchError("the known command's environment is empty (it was never read from /proc/PID/environ); "
                                "starting it without one would lose CUDA_VISIBLE_DEVICES and the rest; nothing was changed")
        pids: set[int] = set()
        if s.pid > 1:
            cmdline = await procs.read_cmdline(self.host, s.pid)
            if cmdline is not None and tuple(cmdline) == tuple(s.argv):
                raise RelaunchError(f"pid {s.pid} on {name} still runs this server: relaunch it instead of starting "
                                    "a second one; nothing was changed")
            pids = {s.pid, *(p.pid for p in procs.alive_in_group(await procs.list_procs(self.host), s.pgid))}
        port = self.plan.port
        self.note(Step.WAITING_PORT, f"waiting for port {port} to be free")
        held = await procs.wait_port_free(self.host, port, o.port_timeout_s)
        if held:
            raise RelaunchError(f"port {port} on {name} is still in use after {o.port_timeout_s:g} s (listening "
                                f"socket inode {held[0]}; `ss -ltnp 'sport = :{port}'` shows who holds it): a "
                                "server may run there — relaunch it instead; nothing was changed")
        if pids and await procs.gpu_apps(self.host) is not None:  # a host with no GPU has nothing to wait for
            self.note(Step.WAITING_GPU, "waiting for the last server's GPU memory to be released")
            held_gpu = await procs.wait_gpu_released(self.host, pids, o.gpu_timeout_s)
            if held_gpu:
                who = ", ".join(f"pid {a.pid} ({a.used_memory})" for a in held_gpu[:5])
                raise RelaunchError(f"GPU memory still held after {o.gpu_timeout_s:g} s by {who} (left over from "
                                    f"pid {s.pid}); nothing was changed — stop them, then start again")

    async def run_known(self) -> RelaunchResult:
        """Start the known command (no stop step) and wait for health. Nothing ran before it, so there is
        nothing to roll back to: a start that failed but still lives is stopped again (unless --no-rollback),
        leaving the host as it was found."""
        plan = self.plan
        try:
            new = await self._start_and_wait(plan.new.argv, plan.log_path, plan.port, rollback=False)
        except HostError as exc:
            if not await self.reconnect(exc):
                return self._lost(exc, "while starting the known command")
            new = Attempt(self.started_pid, plan.log_path, False, f"connection lost while starting ({exc})")
        if new.healthy:
            msg = f"started: pid {new.pid} is healthy on {self.host.name} (log {new.log})"
            return RelaunchResult(plan, new, None, msg, None, tuple(self.steps))
        reason = new.error or "failed"
        self.note(Step.FAILED, f"new launch failed: {reason}", pid=new.pid, diagnoses=new.diagnoses)
        state = f"no server is running on {self.host.name}"
        if new.pid is not None:
            try:
                survivors = procs.alive_in_group(await procs.list_procs(self.host), new.pid)
                if survivors and self.opt.rollback:
                    await self.stop(new.pid, [p.pid for p in survivors], plan.port, rollback=True, first=False)
                    state = f"stopped it again: {state}, as before"
                elif survivors:
                    state = f"pid {new.pid} is left running unhealthy (--no-rollback)"
            except (StepFailed, HostError, RelaunchError) as exc:
                state = f"pid {new.pid} may still run: stopping it failed ({exc})"
        msg = f"new launch failed: {reason}; nothing to roll back to (no server ran before it): {state}"
        return RelaunchResult(plan, new, None, msg, None, tuple(self.steps))

    # -- the relaunch proper ------------------------------------------------------------------------

    async def run(self) -> RelaunchResult:
        s, plan = self.plan.server, self.plan
        try:
            await self.stop(s.pgid, [p.pid for p in self.group], s.port, rollback=False, first=True)
        except StepFailed as exc:
            return await self._after_failure(str(exc), Attempt(None, None, False, str(exc)), started=False)
        except HostError as exc:  # the link dropped while stopping: reconnect, then restore
            if not await self.reconnect(exc):
                return self._lost(exc, "while stopping the old server")
            return await self._after_failure(f"connection lost while stopping ({exc})",
                                             Attempt(None, None, False, str(exc)), started=False)
        try:
            new = await self._start_and_wait(plan.new.argv, plan.log_path, plan.port, rollback=False)
        except HostError as exc:
            if not await self.reconnect(exc):
                return self._lost(exc, "while starting the new command")
            new = Attempt(self.started_pid, plan.log_path, False, f"connection lost while starting ({exc})")
        if new.healthy:
            msg = f"relaunched: pid {new.pid} is healthy on {self.host.name} (log {new.log})"
            return RelaunchResult(plan, new, None, msg, None, tuple(self.steps))
        return await self._after_failure(new.error or "failed", new, started=new.pid is not None)

    async def reconnect(self, exc: Exception) -> bool:
        """One reconnect after a dropped link (SSH); False when the host stays unreachable."""
        self.note(Step.RECONNECTING, f"connection lost ({exc}); reconnecting")
        try:
            await self.host.reconnect()
        except HostError:
            return False
        return True

    def _lost(self, exc: Exception, when: str) -> RelaunchResult:
        pid = self.started_pid
        state = (f"the new server (pid {pid}) may be starting" if pid else "the old server may be stopped")
        msg = (f"lost the connection to {self.host.name} {when} and could not reconnect ({exc}): {state}; "
               f"check the host with `spectui connect {self.host.name}`")
        new = Attempt(pid, self.plan.log_path if pid else None, False, msg)
        return RelaunchResult(self.plan, new, None, msg, None, tuple(self.steps))

    async def _after_failure(self, reason: str, new: Attempt, *, started: bool) -> RelaunchResult:
        plan, s = self.plan, self.plan.server
        self.note(Step.FAILED, f"new launch failed: {reason}", pid=new.pid, diagnoses=new.diagnoses)
        if not self.opt.rollback:
            state = "the new server is not healthy" if started else "no server is running"
            msg = f"new launch failed: {reason}; not rolled back (--no-rollback): {state} on {self.host.name}"
            return RelaunchResult(plan, new, None, msg, None, tuple(self.steps))
        self.note(Step.ROLLING_BACK, "restoring the previous command", rollback=True)
        try:
            if started and new.pid is not None:
                survivors = procs.alive_in_group(await procs.list_procs(self.host), new.pid)
                await self.stop(new.pid, [p.pid for p in survivors], plan.port, rollback=True, first=False)
            log = await self.rollback_log()
            old = await self._start_and_wait(plan.old.argv, log, s.port or plan.port, rollback=True)
        except (StepFailed, HostError) as exc:
            old = Attempt(None, None, False, str(exc))
        if old.healthy:
            self.note(Step.ROLLED_BACK, f"previous command healthy again as pid {old.pid}", rollback=True, pid=old.pid)
            msg = (f"new launch failed: {reason}; rolled back: the previous command is serving again as pid "
                   f"{old.pid} (log {old.log})")
        else:
            self.note(Step.ROLLBACK_FAILED, f"rollback failed: {old.error}", rollback=True, pid=old.pid)
            msg = (f"new launch failed: {reason}; rollback failed too: {old.error}; no healthy server on "
                   f"{self.host.name} — see {old.log or new.log or 'the logs'}")
        return RelaunchResult(plan, new, old, msg, None, tuple(self.steps))

    async def rollback_log(self) -> str:
        """A new log beside the old one for the restored command (never the new launch's, never one on the host)."""
        s, taken = self.plan.server, [self.plan.log_path]
        log = new_log_path(s.log_path, s.cwd, datetime.now(), taken)
        while await self.host.stat(log) is not None:
            taken.append(log)
            log = new_log_path(s.log_path, s.cwd, datetime.now(), taken)
        return log

    async def stop(self, pgid: int, pids: list[int], port: int | None, *, rollback: bool, first: bool) -> None:
        o = self.opt
        self.note(Step.STOPPING, f"SIGTERM to process group {pgid}", rollback=rollback, pid=pgid)
        sent = await procs.signal_group(self.host, pgid, "TERM", own=self.own, as_user=self.as_user)
        if not sent.delivered and sent.reason != "gone":
            if first:  # nothing was signalled: the old server still runs untouched
                raise RelaunchError(f"could not signal process group {pgid} on {self.host.name} "
                                    f"({sent.reason}); nothing was changed")
            raise StepFailed(f"could not signal process group {pgid}: {sent.reason}")
        left = await procs.wait_group_gone(self.host, pgid, o.stop_grace_s)
        if left:
            self.note(Step.KILLING, f"still alive after {o.stop_grace_s:g} s: SIGKILL to process group {pgid}",
                       rollback=rollback, pid=pgid)
            await procs.signal_group(self.host, pgid, "KILL", own=self.own, as_user=self.as_user)
            left = await procs.wait_group_gone(self.host, pgid, o.kill_wait_s)
            if left:
                who = ", ".join(f"{p.pid} ({p.stat})" for p in left[:5])
                raise StepFailed(f"process group {pgid} survived SIGKILL for {o.kill_wait_s:g} s: {who}")
        if port:
            self.note(Step.WAITING_PORT, f"waiting for port {port} to be free", rollback=rollback)
            held = await procs.wait_port_free(self.host, port, o.port_timeout_s)
            if held:
                raise StepFailed(f"port {port} still in use after {o.port_timeout_s:g} s (listening socket inode "
                              f"{held[0]}; `ss -ltnp 'sport = :{port}'` on the host shows who holds it)")
        if await procs.gpu_apps(self.host) is None:
            return  # no nvidia-smi: no GPU memory to wait for, and no such step to report
        self.note(Step.WAITING_GPU, "waiting for GPU memory to be released", rollback=rollback)
        held_gpu = await procs.wait_gpu_released(self.host, set(pids), o.gpu_timeout_s)
        if held_gpu:
            who = ", ".join(f"pid {a.pid} ({a.used_memory})" for a in held_gpu[:5])
            raise StepFailed(f"GPU memory still held after {o.gpu_timeout_s:g} s by {who}")

    async def _start_and_wait(self, argv: Sequence[str], log: str, port: int, *, rollback: bool) -> Attempt:
        started = await self.start(argv, log, rollback=rollback)
        if isinstance(started, Attempt):
            return started
        return await self.wait(started, log, port, rollback=rollback)

    async def start(self, argv: Sequence[str], log: str, *, rollback: bool) -> int | Attempt:
        """Start `argv` detached with output to `log`: its pid, or the failed Attempt (nothing started)."""
        s = self.plan.server
        self.note(Step.STARTING, f"starting detached, log {log}", rollback=rollback)
        try:
            # The new command gets the edited environment; a rollback the old one, exactly as it was.
            env = s.env if rollback else self.plan.new_env
            pid = await procs.start_detached(self.host, s.cwd, log, dict(env), argv, as_user=self.as_user)
        except (RelaunchError, ValueError) as exc:
            return Attempt(None, log, False, str(exc))
        if not rollback:
            self.started_pid = pid
        return pid

    async def wait(self, pid: int, log: str, port: int, *, rollback: bool) -> Attempt:
        """Wait until the started `pid` is healthy (its log through the rules, /health on `port`) or failed."""
        # The previous command was serving minutes ago: give it the time a big model needs to load even
        # when --health-timeout was set short for the new one.
        timeout = max(self.opt.health_timeout_s, ROLLBACK_HEALTH_MIN_S) if rollback else self.opt.health_timeout_s
        watcher = self._watcher(pid, log, port, rollback)
        try:
            out = await watcher.wait_healthy(timeout)
        except HostError as exc:  # the server runs on regardless of our link: reconnect and keep waiting
            if not await self.reconnect(exc):
                raise
            watcher = self._watcher(pid, log, port, rollback)
            out = await watcher.wait_healthy(timeout)
        if out.healthy:
            self.note(Step.HEALTHY, f"pid {pid} healthy ({out.reason})", rollback=rollback, pid=pid)
            if self.opt.observe_s > 0 and not rollback:
                self.note(Step.OBSERVING, f"reading the log for {self.opt.observe_s:g} s", pid=pid)
                out = await watcher.observe(self.opt.observe_s)
                if not out.healthy:
                    return self._attempt(pid, log, out, "crashed after becoming healthy", timeout)
        return self._attempt(pid, log, out, None, timeout)

    def _watcher(self, pid: int, log: str, port: int, rollback: bool) -> LaunchWatcher:
        return LaunchWatcher(self.host, pid, log, port, self.plan.server.host_addr,
                             pipeline=self._pipeline(rollback), on_phase=lambda ph: self._phase(ph, pid, rollback))

    def _attempt(self, pid: int, log: str, out: HealthOutcome, error: str | None, timeout: float) -> Attempt:
        if not out.healthy and error is None:
            error = {
                "crashed": "the server crashed during start-up",
                "exited": "the server exited during start-up",
                "timeout": f"not healthy after {timeout:g} s (phase {out.phase})",
            }.get(out.reason, out.reason)
        cause = None if out.healthy else _cause(out.diagnoses)
        if cause is not None and error is not None and cause.rule not in error:
            error += f" — {cause.rule}: {cause.title}"
        return Attempt(pid, log, out.healthy, error, out.diagnoses, out.accept_len, out.gen_tokens_per_s, cause)

    def _phase(self, phase: str, pid: int, rollback: bool) -> None:
        step = _PHASE_STEPS.get(phase)
        if step is not None:
            self.note(step, phase, rollback=rollback, pid=pid)

    def _pipeline(self, rollback: bool) -> Any:
        from spectui.core.log import Pipeline
        from spectui.core.rules import RuleEngine, load_rules

        rules, errors = load_rules(tuple(self.rules_dirs))
        if errors and not rules:
            raise RulesError(errors[0])
        cmd = self.plan.old if rollback else self.plan.new
        res = None if rollback else self.plan.resolution
        engine = RuleEngine(rules, launch=cmd, resolution=res, version=self.plan.version)
        return Pipeline(engine=engine)
