"""A real OpenSSH sshd with no `Subsystem sftp` line: SFTP is refused, files are read by exec'd commands
with the same exactly-once tail (killed sessions, rotation, a rotation while disconnected) and the same
file-read primitives as over SFTP."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_harness import Sshd, start_sshd
from tailhelp import Collected, running, wait_for

from spectui.sources.base import ConnState, FileReader
from spectui.sources.ssh import ExecFile, SFTPFile, SSHHost, SSHOptions
from spectui.sources.tail import LogTail

pytestmark = pytest.mark.sshd


@pytest.fixture(scope="module")
def nosftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-nosftp"), sftp=False)
    try:
        yield server
    finally:
        server.stop()


def host_for(sshd: Sshd) -> SSHHost:
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def reconnected(k: int):  # type: ignore[no-untyped-def]
    return lambda o: sum(s.state is ConnState.RECONNECTING for s in o.states) >= k and \
        o.states[-1].state is ConnState.CONNECTED


async def test_tail_without_sftp_survives_killed_sessions_and_a_rotation(nosftp: Sshd, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    host = host_for(nosftp)
    await host.connect()
    out = Collected()
    expected: list[str] = []

    def write(tag: str, n: int) -> None:
        for i in range(n):
            append(log, f"{tag} line {i}\n")
            expected.append(f"{tag} line {i}")

    caplog.set_level(logging.INFO, logger="spectui.sources.ssh")
    try:
        async with running(LogTail(host, str(log), from_start=True), out):
            await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
            assert host.transport == "exec"
            write("a", 300)
            append(log, "held partial ")
            await wait_for(out, lambda o: len(o.lines) == 300)
            assert nosftp.kill_sessions() >= 1
            append(log, "line\n")
            expected.append("held partial line")
            write("b", 300)
            await wait_for(out, reconnected(1))
            await wait_for(out, lambda o: len(o.lines) == len(expected))
            os.rename(log, tmp_path / "server.log.1")  # rotation while connected
            write("c", 300)
            await wait_for(out, lambda o: len(o.lines) == len(expected))
            assert nosftp.kill_sessions() >= 1
            write("d", 300)
            await wait_for(out, reconnected(2))
            await wait_for(out, lambda o: len(o.lines) == len(expected))
    finally:
        await host.close()
    assert out.lines == expected
    assert sum(s.rotated for s in out.states) == 1
    said = [s.detail for s in out.states if "refused SFTP" in s.detail]
    assert len(said) == 1 and said[0].startswith(f"following {log} on ")  # the transport is said once
    assert sum("refused SFTP" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("which", ["sftp", "exec"])
async def test_rotation_while_disconnected_loses_nothing(which: str, sshd: Sshd, nosftp: Sshd,
                                                         tmp_path: Path) -> None:
    server = sshd if which == "sftp" else nosftp
    log = tmp_path / "server.log"
    log.write_text("")
    host = host_for(server)
    await host.connect()
    out = Collected()
    expected: list[str] = []

    def write(tag: str, n: int) -> None:
        with open(log, "a") as f:
            for i in range(n):
                f.write(f"{tag}{i}\n")
                expected.append(f"{tag}{i}")

    try:
        async with running(LogTail(host, str(log), from_start=True), out):
            await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
            write("before", 1000)
            await wait_for(out, lambda o: len(o.lines) == 1000)
            server.freeze_listener()  # reconnects hang until thawed: the rename surely falls in the outage
            try:
                assert server.kill_sessions() >= 1
                write("old", 2000)  # written to the old file after the drop, before the rename
                os.rename(log, tmp_path / "server.log.1")
                write("new", 2000)
            finally:
                server.thaw_listener()
            await wait_for(out, reconnected(1))
            await wait_for(out, lambda o: len(o.lines) >= len(expected))
    finally:
        await host.close()
    assert host.transport is None  # closed
    assert len(out.lines) == len(expected) == 5000
    assert out.lines == expected
    rotated = [s.detail for s in out.states if s.rotated]
    assert len(rotated) == 1 and "read the rest of" in rotated[0] and "server.log.1" in rotated[0]
    assert out.numbers[-1] == 2000  # line numbers restart with the new file


@pytest.mark.parametrize("which", ["sftp", "exec"])
async def test_file_read_primitives_are_the_same_over_both_transports(which: str, sshd: Sshd, nosftp: Sshd,
                                                                      tmp_path: Path) -> None:
    host = host_for(sshd if which == "sftp" else nosftp)
    await host.connect()
    odd = tmp_path / "a b'$(touch pwned)\";x"  # quoting: a name that would run a command if spliced
    odd.mkdir()
    data = bytes(range(256)) * 40 + b"\n\0tail"
    (odd / "model.safetensors").write_bytes(data)
    (odd / ".hidden").write_text("h")
    try:
        assert isinstance(host, FileReader)
        path = str(odd / "model.safetensors")
        assert await host.read_range(path, 0, 8) == data[:8]
        assert await host.read_range(path, 1000, 300) == data[1000:1300]
        assert await host.read_range(path, len(data) - 3, 100) == data[-3:]  # fewer bytes at the end
        assert await host.read_range(path, len(data) + 5, 10) == b""
        assert await host.read_file(path) == data
        assert await host.file_size(path) == len(data)
        assert await host.file_size(str(odd / "nope")) is None
        assert await host.exists(path) and not await host.exists(str(odd / "nope"))
        assert await host.listdir(str(odd)) == [".hidden", "model.safetensors"]
        with pytest.raises(FileNotFoundError):
            await host.listdir(str(odd / "nope"))
        with pytest.raises(FileNotFoundError):
            await host.read_range(str(odd / "nope"), 0, 1)
        assert host.transport == which
        f = await host.open(path)
        assert isinstance(f, SFTPFile if which == "sftp" else ExecFile)
        os.rename(path, odd / "moved")  # an open file keeps reading its inode
        (odd / "model.safetensors").write_bytes(b"other")
        assert await f.read(0, 4) == data[:4] and await f.size() == len(data)
        await f.close()
        assert await host.locate(str(odd), os.stat(odd / "moved").st_ino) == str(odd / "moved")
        assert await host.locate(str(odd), 1) is None
        for name in ("new\nline", "trailing blank "):  # not framable in a request line: one-shot exec
            (odd / name).write_bytes(data)
            assert await host.read_range(str(odd / name), 7, 5) == data[7:12]
            assert await host.file_size(str(odd / name)) == len(data)
    finally:
        await host.close()
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


async def test_exec_reads_see_truncation_and_deletion(nosftp: Sshd, tmp_path: Path) -> None:
    host = host_for(nosftp)
    await host.connect()
    log = tmp_path / "t.log"
    log.write_bytes(b"0123456789" * 10)
    try:
        f = await host.open(str(log))
        assert await f.size() == 100 and await f.read(95, 50) == b"56789"
        log.write_bytes(b"abc")  # copytruncate: the same inode, shorter
        assert await f.size() == 3 and await f.read(50, 10) == b""
        log.unlink()  # gone from its folder: reads end, the size stays the last one seen
        assert await f.read(0, 10) == b"" and await f.size() == 3
    finally:
        await host.close()


async def test_the_launch_header_over_ssh_without_sftp(nosftp: Sshd, tmp_path: Path) -> None:
    """The cockpit's attach over exec'd commands only: the launch's server_args line above the backfill."""
    log = tmp_path / "server.log"
    args = "[2026-12-01 10:00:00] server_args=ServerArgs(speculative_num_steps=1, speculative_num_draft_tokens=2)"
    log.write_text("start\n" + args + "\n" + "".join(f"l{i}\n" for i in range(1, 301)))
    host = host_for(nosftp)
    await host.connect()
    try:
        got = []
        async for ev in LogTail(host, str(log), backfill_lines=5, launch_header=True):
            if getattr(ev, "lines", None):
                got.append((ev.first_line, ev.lines[0], ev.header))
                if not ev.header:
                    break
        assert got == [(2, args, True), (298, "l296", False)]
    finally:
        await host.close()
