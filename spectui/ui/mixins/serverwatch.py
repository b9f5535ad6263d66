"""The dashboard's watch on the server itself (a mixin): is it healthy, and who replaced it when it exits.

A worker probes the followed pid and port (sources.liveness: /health through the forward, the process's
state, the log's activity) and puts the verdict in the header. When the process is gone it looks for the
successor — a relaunch done elsewhere (the CLI, a colleague, a supervisor) — and follows it: new pid, new
log, a toast and a marker line in the log pane. A relaunch done by this cockpit lands the same way
(RelaunchFinished) and the worker simply moves to the new pid. No probes for a log file or a replay.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual import work

from spectui.sources.liveness import (
    GONE,
    Activity,
    HealthState,
    LivenessConfig,
    LivenessMonitor,
    await_successor,
)
from spectui.ui.mixins.stalewatch import StaleWatch

DECODE_MARK = "Decode batch"  # SGLang's decode line (its figures vouch for the server once parsed)


def _port_of(session: Any) -> int | None:
    port = session.server_port or getattr(session.server, "port", None)
    if port is None and session.launch is not None:
        args = list(getattr(session.launch, "args", ()) or ())
        with contextlib.suppress(ValueError, IndexError):
            port = int(args[args.index("--port") + 1])
    return port


class ServerWatch(StaleWatch):
    """Mixed into DashboardScreen (which provides session, clock, cockpit, last_update, log_path, …)."""

    health: HealthState | None = None
    successors: list[int]  # pids followed after the first, in order

    def start_server_watch(self) -> None:
        s: Any = self.session  # type: ignore[attr-defined]
        self.successors = []
        if s.host is None or s.replay or s.liveness is False or s.pid is None:
            return  # a plain log file or a replay: nothing to probe, never "unhealthy"
        self.server_watch()  # type: ignore[attr-defined]
        self.start_stale_watch()  # type: ignore[attr-defined]  # (a quiet server's /metrics: stalewatch.py)

    def restart_server_watch(self) -> None:
        """This cockpit relaunched (or started again) the server: probe the new pid at once, verdict cleared."""
        self._set_health(None)
        s: Any = self.session  # type: ignore[attr-defined]
        if s.host is not None and not s.replay and s.liveness is not False and s.pid is not None:
            self.server_watch()  # type: ignore[attr-defined]  # (exclusive: the old round is cancelled)

    def _activity(self) -> Activity:
        u: Any = self.last_update  # type: ignore[attr-defined]
        snap = u.snapshot if u is not None else None
        phase = getattr(getattr(snap, "phase", None), "value", None)
        decode_at = self._figures_at if self._figures_age() is not None else None  # the last decode line's arrival
        pending = getattr(self, "_pending", None)  # read, not parsed yet (a hidden tab parses once a second)
        if pending and self._last_line_at is not None and any(DECODE_MARK in ln for ln in pending[-1][1]):  # type: ignore[attr-defined]
            decode_at = self._last_line_at  # type: ignore[attr-defined]
        return Activity(self._last_line_at, getattr(snap, "running_req", None),  # type: ignore[attr-defined]
                        getattr(snap, "queue_req", None), phase, decode_at)

    def _set_health(self, verdict: HealthState | None) -> None:
        if verdict != self.health:
            self.health = verdict
            self._refresh_header()  # type: ignore[attr-defined]

    @work(exclusive=True, group="liveness")
    async def server_watch(self) -> None:
        s: Any = self.session  # type: ignore[attr-defined]
        config = s.liveness if isinstance(s.liveness, LivenessConfig) else LivenessConfig.from_env()
        ref = s.server or await self._discover_pid(s.pid)
        while True:
            pid = s.pid
            monitor = LivenessMonitor(s.host, pid, _port_of(s), getattr(s.server, "host_addr", None) or "127.0.0.1",
                                      config=config, clock=self.clock, activity=self._activity)  # type: ignore[attr-defined]
            gone = False
            async for verdict in monitor.rounds():
                if s.pid != pid:
                    break  # this cockpit relaunched it: probe the new pid
                self._set_health(verdict)
                gone = verdict is not None and verdict.state == GONE
            if s.pid != pid or not gone:
                self._set_health(None)
                ref = s.server if s.server is not None and s.server.pid == s.pid else (await self._discover_pid(s.pid)
                                                                                       or ref)
                continue
            if ref is None:  # never knew its command line: nothing to match a successor against
                self._set_health(HealthState(GONE, f"process {pid} is gone; r starts it again", GONE, pid))
                while s.pid == pid:  # until this cockpit starts it again (RelaunchFinished moves the pid)
                    await asyncio.sleep(0.5)
                self._set_health(None)
                continue
            self._set_health(HealthState(GONE, f"process {pid} is gone; looking for its successor (r starts it "
                                               "again)", GONE, pid))
            succ = await self._await_successor(ref, pid)
            if succ is not None:
                await self._follow_successor(pid, succ)
                ref = succ
            self._set_health(None)

    async def _discover_pid(self, pid: int | None) -> Any:
        from spectui.sources.discover import discover

        if pid is None:
            return None
        with contextlib.suppress(Exception):
            for proc in await discover(self.session.host):  # type: ignore[attr-defined]
                if proc.pid == pid:
                    return proc
        return None

    async def _await_successor(self, ref: Any, pid: int) -> Any:
        s: Any = self.session  # type: ignore[attr-defined]
        # None once this cockpit's own relaunch got there first (RelaunchFinished moved the session's pid)
        return await await_successor(s.host, ref, old_log=lambda: self.log_path, exclude={pid, *self.successors, ref.pid},  # type: ignore[attr-defined]
                                     clock=self.clock, stop=lambda: s.pid != pid)  # type: ignore[attr-defined]

    async def _follow_successor(self, old_pid: int, succ: Any) -> None:
        from spectui.core.launch import parse_command

        s: Any = self.session  # type: ignore[attr-defined]
        if succ.log_path in (self.log_path, getattr(self, "switching_to", None)) and s.pid == succ.pid:  # type: ignore[attr-defined]
            return  # this cockpit's own relaunch landed there first (RelaunchFinished)
        launch = None
        with contextlib.suppress(Exception):
            launch = parse_command(list(succ.argv))
        s.server, s.current_pid = succ, succ.pid
        if s.server_port is not None and succ.port:
            s.server_port = succ.port
        if launch is not None:
            s.launch = launch
        self.successors.append(succ.pid)
        same_log = succ.log_path == self.log_path  # type: ignore[attr-defined]
        marker = (f"──── pid {old_pid} exited; its successor pid {succ.pid} is followed"
                  + ("" if same_log else f", log {succ.log_path}") + " ────")
        self.notify(f"server pid {old_pid} exited and was relaunched: now following pid {succ.pid}"  # type: ignore[attr-defined]
                    + ("" if same_log else f" ({succ.log_path})"), title="server relaunched", timeout=10,
                    markup=False)
        if same_log:
            self.mark_line(marker)  # type: ignore[attr-defined]
        else:
            await self.switch_log(succ.log_path, launch=launch, marker=marker)  # type: ignore[attr-defined]
