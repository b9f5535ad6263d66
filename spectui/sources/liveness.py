"""Is the followed server alive, and what replaced it: /health probes, the process's state, log activity.

`HealthJudge` is the pure part (no I/O, times passed in): it turns health answers, the process's state
and the log's activity into `healthy` / `unhealthy` / `gone` with a reason. `LivenessMonitor` probes a
server on a host (through `host.forward_port`, like every probe) and yields a `HealthState` per round.
`find_successor` looks, after the followed process exited, for the server that took its place (same
port, same log folder, same program and model: a relaunch done by the CLI, a colleague or a supervisor).

Quiet is not stuck: an idle server that answers /health is healthy however old its last log line; a
server with requests running or queued whose log stops is not. While it starts (no 200 yet, log phase
before ready) no judgement is made from /health, whose silence is normal then.

The cadence (what a watcher costs the server, docs/ARCHITECTURE.md "liveness"): a round every `interval`
(1 s) while the server starts, fails a probe, is stopped or has work in flight without a decode line; every
`calm_interval` (2 s) once it answers and idles; every `vouched_interval` (5 s) while fresh decode lines
prove it alive, and those lines stand in for the probes skipped (a verdict still comes `unhealthy_after`
after the last sign of life). Every question goes through the host's shared prober (sources.probeshare):
tabs of the same server ask /health once, tabs of one host read their pids' states in one command.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from spectui.sources.base import Host, ServerProcess
from spectui.sources.probeshare import process_state, process_states  # noqa: F401 - re-exported

HEALTHY, UNHEALTHY, GONE = "healthy", "unhealthy", "gone"
_UP_PHASES = ("ready", "serving")


@dataclass(frozen=True, slots=True)
class LivenessConfig:
    """Thresholds (seconds). `from_env` reads SPECTUI_UNHEALTHY_AFTER / SPECTUI_LOG_QUIET_AFTER /
    SPECTUI_HEALTH_INTERVAL, so a test (or an impatient operator) can tighten them."""

    interval: float = 1.0  # one probe round (health + process state) this often
    unhealthy_after: float = 10.0  # no 200 from /health for this long (once the server is up)
    log_quiet_after: float = 30.0  # no log line for this long while requests run or wait
    probe_timeout: float = 2.0
    generate_check: bool = True  # confirm a quiet-but-answering server with /health_generate
    calm_interval: float = 2.0  # answering and idle (no work, no fresh decode line): a round this often
    vouched_interval: float = 5.0  # a decode line within `fresh_log` proves it alive: /health this often
    fresh_log: float = 5.0  # a decode line this recent is a sign of life

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: float) -> LivenessConfig:
        env = dict(os.environ if env is None else env)
        values: dict[str, float] = {}
        for name, var in (("unhealthy_after", "SPECTUI_UNHEALTHY_AFTER"),
                          ("log_quiet_after", "SPECTUI_LOG_QUIET_AFTER"), ("interval", "SPECTUI_HEALTH_INTERVAL")):
            try:
                if env.get(var):
                    values[name] = max(0.1, float(env[var]))
            except ValueError:
                pass  # a bad value keeps the default: liveness is advisory
        values.update(overrides)
        cfg = cls(**values)  # type: ignore[arg-type]
        if cfg.probe_timeout > cfg.unhealthy_after / 3:  # a few probes must fail before the verdict is due
            cfg = dataclasses.replace(cfg, probe_timeout=max(0.5, cfg.unhealthy_after / 3))
        return cfg


@dataclass(frozen=True, slots=True)
class Activity:
    """What the log says right now: when its last line came (same clock as the judge), requests, phase."""

    last_line_at: float | None = None
    running: int | None = None
    queued: int | None = None
    phase: str | None = None
    decode_at: float | None = None  # when the last decode line came (its figures changed), same clock


@dataclass(frozen=True, slots=True)
class HealthState:
    state: str  # healthy | unhealthy | gone
    reason: str
    kind: str = ""  # what decided it: health, log, stopped, gone, ok (a change of kind is a new event)
    pid: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.state, self.kind)

    def to_event(self) -> dict[str, object]:
        return {"type": "health", "state": self.state, "reason": self.reason, "pid": self.pid}


def _secs(x: float) -> str:
    return f"{int(x)} s" if x < 120 else f"{int(x // 60)} min"


@dataclass
class HealthJudge:
    """The verdict from what was seen; every method takes `now` (a monotonic clock)."""

    config: LivenessConfig
    started: float
    pid: int | None = None
    last_ok: float | None = None  # last 200 from /health
    last_code: int | None = None  # the latest probe's status (None: no answer)
    last_detail: str = ""
    up_since: float | None = None  # first time the server was seen up (200, or the log said ready)
    proc_state: str | None = "?"  # /proc stat state letter; None = gone
    stopped_since: float | None = None
    generate_ok: bool | None = None  # the latest /health_generate, when one was asked
    vouched: float | None = None  # the last decode line that stood in for a skipped /health probe
    history: list[tuple[float, str]] = field(default_factory=list)

    def health(self, now: float, code: int | None, detail: str = "") -> None:
        self.last_code, self.last_detail = code, detail
        if code == 200:
            self.last_ok = now
            self.up_since = self.up_since or now

    def vouch(self, at: float) -> None:
        """A decode line at `at` proves the server alive; counted only while /health last answered 200 (a
        server that stopped answering is not vouched for by its log: its HTTP side may be stuck)."""
        if self.last_code == 200 and at > (self.vouched if self.vouched is not None else -1e18):
            self.vouched = at

    def cadence(self, now: float, act: Activity) -> float:
        """Seconds between probe rounds now (see the module's docstring)."""
        cfg = self.config
        if (self.up_since is None or self.last_code != 200 or self.proc_state is None
                or self.stopped_since is not None):
            return cfg.interval  # starting, failing, stopped or not yet seen: watch closely
        if act.decode_at is not None and now - act.decode_at <= min(cfg.fresh_log, cfg.unhealthy_after / 2):
            return max(cfg.interval, min(cfg.vouched_interval, cfg.unhealthy_after / 2))
        if (act.running or 0) + (act.queued or 0):
            return cfg.interval  # work in flight and no fresh decode line: watch closely
        return max(cfg.interval, min(cfg.calm_interval, cfg.unhealthy_after / 3))

    def process(self, now: float, state: str | None) -> None:
        self.proc_state = state
        if state in ("T", "t"):
            self.stopped_since = self.stopped_since or now
        else:
            self.stopped_since = None

    def judge(self, now: float, act: Activity) -> HealthState | None:
        """The verdict, or None while it cannot be judged yet (starting, nothing answered)."""
        cfg, pid = self.config, self.pid
        if self.proc_state is None:
            return HealthState(GONE, f"process {pid} is gone", GONE, pid)
        if act.phase in _UP_PHASES and self.up_since is None:
            self.up_since = now  # the log says it is up: /health should answer from now on
        stopped = (now - self.stopped_since) if self.stopped_since is not None else None
        if self.up_since is not None:
            seen = self.last_ok if self.last_ok is not None else self.up_since
            by_log = self.vouched is not None and self.vouched > seen
            silent = now - (self.vouched if by_log else seen)  # type: ignore[operator]
            if silent >= cfg.unhealthy_after:
                what = (f"/health answered {self.last_code}" if self.last_code not in (None, 200)
                        else "no /health answer")
                why = f"{what} for {_secs(silent)}" + (" (nor a decode line)" if by_log else "")
                if stopped is not None:
                    why += " (the process is stopped: SIGSTOP?)"
                return HealthState(UNHEALTHY, why, "health", pid)
        if self.last_ok is not None and self.stopped_since is not None and self.last_ok >= self.stopped_since:
            stopped = None  # it answered since: SIGCONT came between the two probes of this round
        if stopped is not None and stopped >= cfg.unhealthy_after:
            return HealthState(UNHEALTHY, f"the process is stopped (SIGSTOP?) for {_secs(stopped)}", "stopped", pid)
        busy = (act.running or 0) + (act.queued or 0)
        if busy and act.last_line_at is not None and act.phase not in ("crashed", "stopped"):
            quiet = now - act.last_line_at
            if quiet >= cfg.log_quiet_after and self.generate_ok is not True:
                return HealthState(UNHEALTHY, f"no log line for {_secs(quiet)} while {act.running or 0} running, "
                                              f"{act.queued or 0} queued", "log", pid)
        if self.up_since is None:
            return None  # starting: /health is not expected to answer yet
        return HealthState(HEALTHY, "answers /health" if self.last_ok is not None else "up, by its log", "ok", pid)


class LivenessMonitor:
    """Probe one server (pid + port on a host) every `config.interval`; yield a HealthState or None per round."""

    def __init__(self, host: Host, pid: int | None, port: int | None, addr: str = "127.0.0.1", *,
                 config: LivenessConfig | None = None, clock: Callable[[], float] = time.monotonic,
                 activity: Callable[[], Activity] = Activity, api_key: str | None = None) -> None:
        self.host, self.pid, self.port, self.addr = host, pid, port, addr
        self.config = config or LivenessConfig.from_env()
        self.clock = clock
        self.activity = activity
        self.api_key = api_key
        self.judge = HealthJudge(self.config, clock(), pid)

    async def rounds(self) -> AsyncIterator[HealthState | None]:
        """A verdict (or None) every `interval`; the server is asked at the judge's cadence (HealthJudge.cadence),
        the process's state every round on this machine (a file read) and at that cadence on a remote host."""
        from spectui.sources import probeshare
        from spectui.sources.local import LocalHost

        shared = probeshare.acquire(self.host, self.pid)
        local = isinstance(self.host, LocalHost)
        asked: float | None = None  # clock() of the last round that asked the server
        try:
            while True:
                began = self.clock()
                act = self.activity()
                if act.decode_at is not None and began - act.decode_at <= self.config.fresh_log:
                    self.judge.vouch(act.decode_at)
                due = asked is None or began - asked >= self.judge.cadence(began, act) - 0.1 * self.config.interval
                if due or local:
                    await self._round(shared, (began - asked) if due and asked is not None else self.config.interval,
                                      health=due)
                    if due:
                        asked = began
                verdict = self.judge.judge(self.clock(), self.activity())
                yield verdict
                if verdict is not None and verdict.state == GONE:
                    return
                await asyncio.sleep(max(0.05, self.config.interval - (self.clock() - began)))
        finally:
            await probeshare.release(shared, self.host, self.pid)

    async def _round(self, shared: Any, max_age: float, *, health: bool) -> None:
        """One round's questions; an answer another watcher got within `max_age` (90 %) is taken instead."""
        tasks = []
        if self.pid is not None:
            tasks.append(self._check_process(shared, 0.9 * max_age))
        if self.port and health:
            tasks.append(self._check_health(shared, 0.9 * max_age))
        await asyncio.gather(*tasks)

    async def _check_process(self, shared: Any, max_age: float) -> None:
        assert self.pid is not None
        try:
            state, _age = await shared.process_state(self.pid, max_age=max_age)
        except Exception:  # noqa: BLE001 - a host hiccup (SSH reconnecting) says nothing about the server
            return
        self.judge.process(self.clock(), state)

    async def _check_health(self, shared: Any, max_age: float) -> None:
        assert self.port is not None
        cfg = self.config
        health, age = await shared.health(self.port, self.addr, api_key=self.api_key, timeout=cfg.probe_timeout,
                                          max_age=max_age)
        at = self.clock() - age  # when it was answered (another tab's probe, maybe), on this clock
        if self.judge.last_ok is None or at >= self.judge.last_ok:
            self.judge.health(at, health.status_code, health.detail)
        act = self.activity()
        quiet = act.last_line_at is not None and self.clock() - act.last_line_at >= cfg.log_quiet_after
        if health.ok and quiet and (act.running or act.queued) and cfg.generate_check:
            # /health answers but the log stopped with work in flight: ask for an end-to-end generate.
            try:
                resp, _ = await shared.get(self.port, "/health_generate", self.addr, api_key=self.api_key,
                                           timeout=cfg.probe_timeout, max_age=max_age)
                self.judge.generate_ok = resp.status_code == 200
            except Exception:  # noqa: BLE001 - no answer is the answer
                self.judge.generate_ok = False
        elif not quiet:
            self.judge.generate_ok = None


# ---- successor -----------------------------------------------------------------------------------


def _flag(argv: tuple[str, ...], *names: str) -> str | None:
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def successor_score(old: ServerProcess, new: ServerProcess, old_log: str | None = None) -> int:
    """How surely `new` replaced `old` (0 = not at all): same program required; port, log folder, model,
    working directory and the rest of the command line add up."""
    if new.pid == old.pid or (old.program and new.program != old.program):
        return 0
    same_port = old.port is not None and new.port == old.port
    log = old_log or old.log_path
    same_dir = bool(log and new.log_path and os.path.dirname(log) == os.path.dirname(new.log_path))
    model_old = _flag(old.argv, "--model-path", "--model")
    same_model = model_old is not None and model_old == _flag(new.argv, "--model-path", "--model")
    if not (same_port or (same_dir and same_model)):
        return 0
    score = 4 * same_port + 2 * same_dir + 2 * same_model + (old.cwd == new.cwd)
    shared = len(set(old.argv) & set(new.argv))
    return score * 100 + min(99, shared)  # ties: the command line closest to the old one


async def find_successor(host: Host, old: ServerProcess, *, old_log: str | None = None,
                         exclude: set[int] | None = None) -> ServerProcess | None:
    """The server that took `old`'s place on `host`, or None (yet). Needs a log file to follow."""
    from spectui.sources.discover import discover

    best, best_score = None, 0
    for proc in await discover(host):
        if proc.pid in (exclude or set()) or not proc.log_path:
            continue
        score = successor_score(old, proc, old_log)
        if score > best_score:
            best, best_score = proc, score
    return best


SUCCESSOR_FAST_S = 120.0  # after an exit, look for a successor every second this long, then every SUCCESSOR_SLOW
SUCCESSOR_SLOW = 5.0


async def await_successor(host: Host, ref: ServerProcess, *, old_log: Callable[[], str | None], exclude: set[int],
                          clock: Callable[[], float] = time.monotonic,
                          stop: Callable[[], bool] = lambda: False) -> ServerProcess | None:
    """Poll `find_successor` until a server took `ref`'s place (every second, then every SUCCESSOR_SLOW s);
    None as soon as `stop()` says the caller no longer needs one. `old_log()` is read each round (the
    follower's log can change meanwhile). A host hiccup (SSH reconnecting) is tried again next round."""
    import contextlib

    began = clock()
    while True:
        if stop():
            return None
        with contextlib.suppress(Exception):
            succ = await find_successor(host, ref, old_log=old_log(), exclude=exclude)
            if succ is not None:
                return succ
        await asyncio.sleep(1.0 if clock() - began < SUCCESSOR_FAST_S else SUCCESSOR_SLOW)
