"""One prober per host: what several watchers of the same host (tabs, a group's members, a watch) ask the
server and the host is asked once and shared.

`acquire(host)` returns the host's `HostProbes` (keyed by the host's name: `local`, `user@gpu1:2222`; every
tab opens its own connection, so the object itself is not the key; and by event loop, which no client or
connection outlives) and `release` gives it back; the last release closes its HTTP clients. Each question carries `max_age`, the caller's own cadence: an answer got
at most that long ago (by anyone) is returned with its age instead of asking again, and a question already
in flight is awaited, not sent twice.

- `health` / `metrics` / `get`: one server's /health, /metrics (by address, port and API key);
- `process_state`: the state letter of a followed pid; on a remote host every pid watched there is read in
  one `cat /proc/A/stat /proc/B/stat …` (ten tabs of ten servers on one host: one exec, not ten);
- `run`: a host command whose answer every watcher shares (the GPU strip's nvidia-smi).

Ages are on time.monotonic; a caller with its own clock converts (answered at `its_now - age`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.sources.base import Host, RunResult


@dataclass
class _Entry:
    at: float = -1e18  # time.monotonic() of the answer
    value: Any = None
    error: BaseException | None = None
    flight: asyncio.Future[Any] | None = None
    at_flight: float = -1e18  # when the question in flight was asked


@dataclass
class HostProbes:
    """The shared answers of one host (see the module's docstring)."""

    name: str
    hosts: list[Host] = field(default_factory=list)  # every watcher's connection to it (one per tab)
    users: int = 0
    key: tuple[int, str] = (0, "")  # its place in the registry (event loop, name)
    pids: Counter[int] = field(default_factory=Counter)  # followed pids (a pid watched twice counts twice)
    asked: Counter[str] = field(default_factory=Counter)  # questions actually sent, by kind (figures, tests)
    _cache: dict[Any, _Entry] = field(default_factory=dict)
    _probes: dict[tuple[str, int, str | None], tuple[Any, Host]] = field(default_factory=dict)

    @property
    def host(self) -> Host:
        """The connection the shared questions go through: the oldest still held."""
        return self.hosts[0]

    async def _shared(self, key: Any, max_age: float, fetch: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
        """(answer, its age in seconds): the cached one when younger than `max_age`, else fetched once for
        every caller waiting on it. A failed fetch raises in every waiting caller (and is shared as well);
        a fetch cancelled half-way (its watcher stopped) leaves the next caller to ask again."""
        entry = self._cache.setdefault(key, _Entry())
        waited: float | None = None  # when the question this caller waited for was asked
        while entry.flight is not None:
            waited = entry.at_flight
            await asyncio.shield(entry.flight)
        stale = entry.at < waited if waited is not None else time.monotonic() - entry.at >= max_age
        if stale:  # (a flight waited for that was cancelled half-way counts as none)
            flight = entry.flight = asyncio.get_running_loop().create_future()
            # an answer's age counts from its question: a caller's own last answer is never young enough for
            # its next round (the answer's arrival would be, by the time the question took)
            asked = entry.at_flight = time.monotonic()
            try:
                value = await fetch()
                entry.value, entry.error, entry.at = value, None, asked
            except Exception as exc:  # noqa: BLE001 - shared with the waiters, raised below
                entry.value, entry.error, entry.at = None, exc, asked
            finally:
                entry.flight = None
                flight.set_result(None)
        if entry.error is not None:
            raise entry.error
        return entry.value, max(0.0, time.monotonic() - entry.at)

    def probe(self, port: int, addr: str = "127.0.0.1", api_key: str | None = None, timeout: float = 2.0) -> Any:
        """The ServerProbe (HTTP client, port forward) of one server on this host, made once."""
        from spectui.sources.http import ServerProbe

        key = (addr, port, api_key)
        made = self._probes.get(key)
        if made is None:
            made = self._probes[key] = (ServerProbe(self.host, port, addr, timeout=timeout, api_key=api_key),
                                        self.host)
        return made[0]

    async def health(self, port: int, addr: str = "127.0.0.1", *, api_key: str | None = None,
                     timeout: float = 2.0, max_age: float = 1.0) -> tuple[Any, float]:
        """(sources.http.Health, age): one /health of that server for every watcher within `max_age`."""
        probe = self.probe(port, addr, api_key, timeout)

        async def fetch() -> Any:
            self.asked["health"] += 1
            return await probe.health()

        return await self._shared(("health", addr, port, api_key), max_age, fetch)

    async def metrics(self, port: int, addr: str = "127.0.0.1", *, api_key: str | None = None,
                      timeout: float = 3.0, max_age: float = 5.0) -> tuple[Any, float]:
        """(samples, age) of that server's /metrics; raises ProbeError as ServerProbe.metrics does."""
        probe = self.probe(port, addr, api_key, timeout)

        async def fetch() -> Any:
            self.asked["metrics"] += 1
            return await probe.metrics()

        return await self._shared(("metrics", addr, port, api_key), max_age, fetch)

    async def get(self, port: int, path: str, addr: str = "127.0.0.1", *, api_key: str | None = None,
                  timeout: float = 2.0, max_age: float = 1.0) -> tuple[Any, float]:
        """(httpx.Response, age) of one GET (/health_generate) through that server's shared client."""
        probe = self.probe(port, addr, api_key, timeout)

        async def fetch() -> Any:
            self.asked[path] += 1
            return await probe._get(path)  # noqa: SLF001 - the probe's capped GET, same client and forward

        return await self._shared(("get", path, addr, port, api_key), max_age, fetch)

    async def process_state(self, pid: int, *, max_age: float = 1.0) -> tuple[str | None, float]:
        """(the pid's /proc state letter or None when gone, age). Every pid watched on the host is read in
        the same go (see the module's docstring); a host hiccup raises."""
        from spectui.sources.local import LocalHost

        if isinstance(self.host, LocalHost):
            self.asked["stat"] += 1
            return await process_state(self.host, pid), 0.0  # a file read here: nothing to share
        pids = sorted({pid, *self.pids})

        async def fetch() -> Any:
            self.asked["stat"] += 1
            return await process_states(self.host, pids)

        entry = self._cache.get(("stat",))
        if entry is not None and entry.value is not None and pid not in entry.value and entry.flight is None:
            entry.at = -1e18  # a pid the last read did not cover: read again now
        states, age = await self._shared(("stat",), max_age, fetch)
        if pid not in states:  # watched after the read in flight began: its own read
            return (await process_states(self.host, [pid])).get(pid), 0.0
        return states[pid], age

    async def run(self, argv: Sequence[str], *, timeout: float = 10.0, max_age: float = 5.0) -> tuple[RunResult, float]:
        """(RunResult, age) of a command every watcher of the host shares (not for commands with effects)."""
        async def fetch() -> Any:
            self.asked["run"] += 1
            return await self.host.run(list(argv), timeout=timeout)

        return await self._shared(("run", tuple(argv)), max_age, fetch)

    async def close(self, host: Host | None = None) -> None:
        """Close the HTTP clients made through `host` (every one when None); the others stay."""
        gone = [k for k, (_, h) in self._probes.items() if host is None or h is host]
        probes = [self._probes.pop(k)[0] for k in gone]
        for probe in probes:
            with contextlib.suppress(Exception):
                await probe.close()
        if host is None:
            self._cache.clear()


async def process_state(host: Host, pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, T, …), or None when the process is gone (or a zombie).

    On this machine the file is read directly (a probe round every second would otherwise start a `cat`,
    the larger part of an idle cockpit's probing CPU); on a remote host, one `cat` over the connection."""
    from spectui.sources.local import LocalHost

    if isinstance(host, LocalHost):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:  # no such process (or /proc hides it): gone
            return None
    else:
        res = await host.run(["cat", f"/proc/{pid}/stat"], timeout=10)
        text = res.stdout if res.exit_status == 0 else ""
    return _stat_state(text)


def _stat_state(text: str) -> str | None:
    if ")" not in text:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    state = fields[0] if fields else "?"
    return None if state in ("Z", "X") else state


async def process_states(host: Host, pids: list[int]) -> dict[int, str | None]:
    """process_state of several pids on one host in one command (`cat` of their stat files: a line each,
    led by the pid; a pid without a line is gone). A host hiccup raises (it says nothing of the pids)."""
    from spectui.sources.local import LocalHost

    if isinstance(host, LocalHost):
        return {pid: await process_state(host, pid) for pid in pids}
    res = await host.run(["cat", *(f"/proc/{pid}/stat" for pid in pids)], timeout=10)
    lines: dict[int, str] = {}
    for line in res.stdout.splitlines():  # (a comm holding a newline would split its line: read as gone)
        head = line.split(" ", 1)[0]
        if head.isdigit():
            lines[int(head)] = line
    return {pid: _stat_state(lines.get(pid, "")) for pid in pids}


_HOSTS: dict[tuple[int, str], HostProbes] = {}


def _key(host: Host) -> tuple[int, str]:
    """Per event loop (an HTTP client or a connection never outlives its loop), per host name."""
    return id(asyncio.get_running_loop()), str(getattr(host, "name", "") or id(host))


def acquire(host: Host, pid: int | None = None) -> HostProbes:
    """The host's shared prober (made at the first watcher); `pid`: a process this watcher follows."""
    key = _key(host)
    shared = _HOSTS.get(key)
    if shared is None:
        shared = _HOSTS[key] = HostProbes(key[1])
        shared.key = key
    shared.hosts.append(host)
    shared.users += 1
    if pid is not None:
        shared.pids[pid] += 1
    return shared


async def release(shared: HostProbes, host: Host, pid: int | None = None) -> None:
    """This watcher (through `host`) is done: its pid is no longer read, the clients made through its
    connection are closed (a tab's connection may close after it); the last one closes them all."""
    if pid is not None and shared.pids[pid] > 0:
        shared.pids[pid] -= 1
        if not shared.pids[pid]:
            del shared.pids[pid]
    shared.users -= 1
    with contextlib.suppress(ValueError):
        shared.hosts.remove(host)
    if host not in shared.hosts:
        await shared.close(host)
    if shared.users <= 0 or not shared.hosts:
        if _HOSTS.get(shared.key) is shared:
            del _HOSTS[shared.key]
        await shared.close()


def current(host: Host) -> HostProbes | None:
    """The host's shared prober while some watcher holds it (tests, figures), else None."""
    return _HOSTS.get(_key(host))


async def shared_run(host: Host, argv: Sequence[str], *, timeout: float = 10.0, max_age: float = 5.0) -> RunResult:
    """`host.run(argv)`, answered by another watcher's run of the same command on that host within `max_age`
    when one holds the host's prober (the GPU strip of ten tabs on one host: one nvidia-smi, not ten)."""
    shared = acquire(host)
    try:
        result, _age = await shared.run(argv, timeout=timeout, max_age=max_age)
        return result
    finally:
        await release(shared, host)
