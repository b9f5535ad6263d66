"""Process-group, port and detached-start operations against real processes on the local host."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spectui.errors import RelaunchError
from spectui.ops import hostcmds, procs
from spectui.sources.local import LocalHost

SLEEPER = "import sys, time; time.sleep(float(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 60)"
NASTY = ["with space", 'double"quote', "single'quote", "$(touch /tmp/spectui-pwned)", "a;b", "`id`", "*", "",
         "--flag=$HOME", "new\nline", "back\\slash", "tab\there"]


def _kill_group(pgid: int) -> None:
    if pgid > 1 and pgid != os.getpgrp():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _proc_argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


async def _group_when(host: LocalHost, leader: int, ready) -> tuple[list, list]:  # type: ignore[no-untyped-def]
    """The host's processes and the leader's live group, once `ready(group)` holds (10 s at most): the
    launcher shell spawns its children after start_detached returns."""
    deadline = time.monotonic() + 10
    while True:
        all_procs = await procs.list_procs(host)
        group = procs.alive_in_group(all_procs, leader)
        if ready(group) or time.monotonic() > deadline:
            return all_procs, group
        time.sleep(0.05)


def _exec_done(pid: int, program: str) -> None:
    """Wait until the start chain (sh -> setsid -> nohup -> env) has exec'd the program itself."""
    deadline = time.monotonic() + 10
    while _proc_argv(pid)[:1] != [program] and time.monotonic() < deadline:
        time.sleep(0.02)


def _proc_env(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")[:-1]
    return dict(item.split("=", 1) for item in raw)


async def test_start_detached_round_trips_argv_env_and_cwd(tmp_path: Path) -> None:
    host = LocalHost()
    work = tmp_path / "work dir; $(x)"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "SGLANG_LOG_MS": "1", "WEIRD": "a b 'c' \"d\" $(e) ;f"}
    argv = [sys.executable, "-c", SLEEPER, *NASTY]
    log = str(work / "server-20261130-150000.log")
    pid = await procs.start_detached(host, str(work), log, env, argv)
    try:
        _exec_done(pid, sys.executable)
        assert _proc_argv(pid) == argv
        assert _proc_env(pid) == env
        assert os.readlink(f"/proc/{pid}/cwd") == str(work)
        assert os.getpgid(pid) == pid and os.getsid(pid) == pid  # its own session and group
        assert Path(log).exists()
        assert not Path("/tmp/spectui-pwned").exists()
    finally:
        _kill_group(pid)


async def test_start_refuses_to_overwrite_a_log(tmp_path: Path) -> None:
    log = tmp_path / "old.log"
    log.write_text("precious\n")
    with pytest.raises(RelaunchError, match="log file not creatable"):
        await procs.start_detached(LocalHost(), str(tmp_path), str(log), {"PATH": os.environ["PATH"]},
                                   [sys.executable, "-c", SLEEPER])
    assert log.read_text() == "precious\n"


@pytest.mark.parametrize("pgid", [0, 1, -5])
def test_never_signals_everything(pgid: int) -> None:
    with pytest.raises(ValueError, match="refusing"):
        hostcmds.signal_group_argv(pgid, "TERM")


async def test_never_signals_own_group() -> None:
    with pytest.raises(RelaunchError, match="spectui's own"):
        await procs.signal_group(LocalHost(), os.getpgrp(), "TERM", own=procs.own_pgids(LocalHost()))


async def test_stop_group_spares_a_bystander(tmp_path: Path) -> None:
    host = LocalHost()
    env = {"PATH": os.environ["PATH"]}
    server = await procs.start_detached(host, str(tmp_path), str(tmp_path / "s.log"), env,
                                        ["sh", "-c", 'python3 -c "$1" & python3 -c "$1"', "sh", SLEEPER])
    bystander = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    try:
        _, members = await _group_when(host, server, lambda g: len(g) >= 3)
        assert len(members) == 3  # sh and its two pythons
        assert (await procs.signal_group(host, server, "TERM")).delivered
        assert await procs.wait_group_gone(host, server, 10) == []
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        _kill_group(server)


async def test_foreign_members_of_the_group_are_named(tmp_path: Path) -> None:
    host = LocalHost()
    # The launcher shell starts a sibling (sleep) and then the "server": the sibling is not the server's.
    leader = await procs.start_detached(
        host, str(tmp_path), str(tmp_path / "s.log"), {"PATH": os.environ["PATH"]},
        ["sh", "-c", 'sleep 60 & python3 -c "$1" 60; wait', "sh", SLEEPER])
    try:
        all_procs, group = await _group_when(
            host, leader, lambda g: {p.args.split()[0] for p in g} >= {"sleep", "python3"})
        server = next(p for p in group if p.args.startswith("python3"))
        foreign = procs.foreign_members(all_procs, leader, server.pid)
        assert [p.args.split()[0] for p in foreign] == ["sleep"]
        # Relative to the launcher shell, everything in the group is its own.
        assert procs.foreign_members(all_procs, leader, leader) == []
    finally:
        _kill_group(leader)


async def test_port_listeners_seen_and_freed() -> None:
    host = LocalHost()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    try:
        assert await procs.listening_inodes(host, port)
        assert await procs.wait_port_free(host, port, 0.3)  # still held at the timeout
    finally:
        sock.close()
    assert await procs.wait_port_free(host, port, 5) == []


async def test_gpu_apps_without_nvidia_smi_is_none() -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi")
    assert await procs.gpu_apps(LocalHost()) is None
    assert await procs.wait_gpu_released(LocalHost(), {1234}, 1) is None


async def test_read_cmdline_of_gone_process_is_none() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert await procs.read_cmdline(LocalHost(), p.pid) is None
    assert await procs.read_cmdline(LocalHost(), os.getpid()) == tuple(_proc_argv(os.getpid()))
