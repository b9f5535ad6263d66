"""Process-group, port and GPU operations on a host, built on Host.run and the argv of hostcmds.py."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from spectui.errors import RelaunchError
from spectui.ops import hostcmds
from spectui.ops.hostcmds import GpuApp, ProcEntry

POLL_S = 0.25


@dataclass(frozen=True, slots=True)
class SignalOutcome:
    delivered: bool
    reason: str = ""  # "permission" / "gone" / the host's stderr when not delivered


def own_pgids(host: Any) -> tuple[int, ...]:
    """Process groups spectui must never signal: its own (the local host only; over SSH every command
    runs in a fresh session of sshd, which no server shares)."""
    return (os.getpgrp(),) if getattr(host, "name", "") == "local" else ()


async def list_procs(host: Any) -> list[ProcEntry]:
    result = await host.run(hostcmds.ps_argv(), timeout=30)
    if result.exit_status != 0 and not result.stdout:
        raise RelaunchError(f"{host.name}: cannot list processes with ps: {result.stderr.strip()[:200]}")
    return hostcmds.parse_ps(result.stdout)


def alive_in_group(procs: Sequence[ProcEntry], pgid: int) -> list[ProcEntry]:
    return [p for p in procs if p.pgid == pgid and p.alive]


def foreign_members(procs: Sequence[ProcEntry], pgid: int, server_pid: int) -> list[ProcEntry]:
    """Live members of the group that are neither the server, its descendants nor its launcher chain
    (the `nohup bash -c …` that started it). Signalling the group would hit them too."""
    by_pid = {p.pid: p for p in procs}
    related = {server_pid}
    pid = server_pid
    while pid in by_pid:  # up the launcher chain, as long as it stays in the group
        parent = by_pid.get(by_pid[pid].ppid)
        if parent is None or parent.pid <= 1 or parent.pgid != pgid or parent.pid in related:
            break
        related.add(parent.pid)
        pid = parent.pid
    descendants = {server_pid}
    changed = True
    while changed:
        changed = False
        for p in procs:
            if p.ppid in descendants and p.pid not in descendants:
                descendants.add(p.pid)
                changed = True
    related |= descendants
    return [p for p in alive_in_group(procs, pgid) if p.pid not in related]


async def signal_group(host: Any, pgid: int, signal: str, *, own: Collection[int] = (),
                       as_user: Sequence[str] = ()) -> SignalOutcome:
    """Signal the group; `as_user`: an argv prefix (sudo -n -u OWNER --) sending it as the server's owner."""
    try:
        argv = hostcmds.signal_group_argv(pgid, signal, own_pgids=tuple(own))
    except ValueError as exc:
        raise RelaunchError(f"{exc}; nothing was changed") from None
    result = await host.run([*as_user, *argv], timeout=30)
    if result.exit_status == 0:
        return SignalOutcome(True)
    err = result.stderr.lower()
    if "not permitted" in err or "permission" in err:
        return SignalOutcome(False, "permission")
    if "no such process" in err:
        return SignalOutcome(False, "gone")
    return SignalOutcome(False, result.stderr.strip()[:200] or f"exit status {result.exit_status}")


async def wait_group_gone(host: Any, pgid: int, timeout: float) -> list[ProcEntry]:
    """Poll until no live process is left in the group; returns the survivors at timeout (else [])."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        left = alive_in_group(await list_procs(host), pgid)
        if not left or loop.time() >= deadline:
            return left
        await asyncio.sleep(POLL_S)


async def listening_inodes(host: Any, port: int) -> list[int]:
    result = await host.run(hostcmds.listeners_argv(), timeout=30)
    # tcp6 may be missing (IPv6 disabled): cat then exits 1 but printed the IPv4 table.
    return hostcmds.parse_listening_ports(result.stdout).get(port, [])


async def wait_port_free(host: Any, port: int, timeout: float) -> list[int]:
    """Poll until nothing listens on `port`; returns the listening socket inodes at timeout (else [])."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        held = await listening_inodes(host, port)
        if not held or loop.time() >= deadline:
            return held
        await asyncio.sleep(POLL_S)


async def gpu_apps(host: Any) -> list[GpuApp] | None:
    """Compute apps on the GPUs, or None where nvidia-smi does not exist (nothing to wait for)."""
    result = await host.run(hostcmds.gpu_apps_argv(), timeout=60)
    if result.exit_status == 127:
        return None
    if result.exit_status != 0:
        raise RelaunchError(f"{host.name}: nvidia-smi failed: {result.stderr.strip()[:200]}")
    return hostcmds.parse_gpu_apps(result.stdout)


async def wait_gpu_released(host: Any, pids: Collection[int], timeout: float) -> list[GpuApp] | None:
    """Poll until none of `pids` holds GPU memory; returns the holders at timeout ([] = released,
    None = no nvidia-smi on this host)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        apps = await gpu_apps(host)
        if apps is None:
            return None
        held = [a for a in apps if a.pid in pids]
        if not held or loop.time() >= deadline:
            return held
        await asyncio.sleep(POLL_S * 4)


async def read_cmdline(host: Any, pid: int) -> tuple[str, ...] | None:
    """/proc/PID/cmdline as argv, or None when the process is gone (a zombie's cmdline is empty)."""
    result = await host.run(hostcmds.cmdline_argv(pid), timeout=30)
    if result.exit_status != 0 or not result.stdout:
        return None
    return tuple(result.stdout.split("\0")[:-1])


async def start_detached(host: Any, cwd: str, log: str, env: dict[str, str], argv: Sequence[str],
                         *, as_user: Sequence[str] = ()) -> int:
    """Start argv detached (own session, SIGHUP ignored) with exactly `env`, in `cwd`, logging to `log`.
    The environment goes on standard input, never on a command line. `as_user`: an argv prefix (sudo -n -u
    USER --) running the start as the server's owner."""
    try:
        argv_, stdin = hostcmds.start_argv(cwd, log, env, argv), hostcmds.env_input(env)
    except ValueError as exc:
        raise RelaunchError(f"could not start the server: {exc}") from None
    result = await host.run([*as_user, *argv_], timeout=60, input=stdin)
    out = result.stdout.strip()
    if result.exit_status != 0 or not out.isdigit():
        reason = hostcmds.START_EXIT_REASONS.get(result.exit_status, f"exit status {result.exit_status}")
        raise RelaunchError(f"could not start the server ({reason}): {result.stderr.strip()[:200]}")
    return int(out)


@dataclass(frozen=True, slots=True)
class Identity:
    """Who spectui's commands run as on a host, and which run-as-another-user tools it has."""

    uid: int
    user: str
    sudo: bool
    runuser: bool


async def identity(host: Any) -> Identity:
    result = await host.run(hostcmds.identity_argv(), timeout=30)
    lines = [*result.stdout.splitlines(), "", "", "", ""]
    if result.exit_status != 0 or not lines[0].strip().isdigit():
        raise RelaunchError(f"{host.name}: cannot tell which user commands run as (`id -u` failed: "
                            f"{result.stderr.strip()[:200]}); nothing was changed")
    return Identity(int(lines[0]), lines[1].strip(), bool(lines[2].strip()), bool(lines[3].strip()))
