"""Fault tests with an in-process asyncssh server (real SSH, real SFTP on the local filesystem, real
commands) behind a TCP proxy that can freeze a connection: stalls, closed channels, dropped connections,
exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from tailhelp import Collected, running, wait_for

from spectui.errors import RemoteCommandError
from spectui.sources.base import ConnState
from spectui.sources.ssh import SSHHost, SSHOptions
from spectui.sources.tail import LogTail


@dataclass
class Faults:
    close_notifier: bool = False  # close every `tail -F` wake-up channel at once
    conns: list[asyncssh.SSHServerConnection] = field(default_factory=list)


class Proxy:
    """TCP proxy; `freeze()` stops forwarding on the connections open now (a stalled link)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._live: list[asyncio.Event] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    def freeze(self) -> None:
        for ev in self._live:
            ev.set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.append(asyncio.current_task())  # type: ignore[arg-type]
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        frozen = asyncio.Event()
        self._live.append(frozen)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await r.read(65536):
                    if frozen.is_set():
                        await asyncio.Event().wait()  # hold forever: nothing passes, nothing closes
                    w.write(data)
                    await w.drain()
            w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    async def close(self) -> None:
        if self.server:
            self.server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def _serve(process: asyncssh.SSHServerProcess, faults: Faults) -> None:
    """Run the command as sshd would: stdin, stdout and stderr streamed both ways (the tail's read loop
    and its wake-up `tail -F` are long-running), the exit status passed back."""
    cmd = process.command or ""
    if cmd.startswith("exec tail") and faults.close_notifier:
        process.close()
        return
    proc = await asyncio.create_subprocess_shell(cmd, stdin=asyncio.subprocess.PIPE,
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def feed() -> None:
        with contextlib.suppress(Exception):
            while data := await process.stdin.read(65536):
                proc.stdin.write(data)
                await proc.stdin.drain()
        with contextlib.suppress(Exception):
            proc.stdin.close()

    async def pump(src: asyncio.StreamReader, dst: Any) -> None:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()

    feeder = asyncio.create_task(feed())
    try:
        await asyncio.gather(pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr))
        process.exit(await proc.wait() or 0)
    except (asyncssh.Error, ConnectionError, BrokenPipeError):
        pass
    finally:
        feeder.cancel()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@dataclass
class Rig:
    host: SSHHost
    faults: Faults
    proxy: Proxy


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key.write_private_key(str(tmp_path / "id"))
    faults = Faults()

    class Server(asyncssh.SSHServer):
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            faults.conns.append(conn)

    server = await asyncssh.create_server(
        Server, "127.0.0.1", 0, server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(client_key.export_public_key().decode()),
        process_factory=lambda p: _serve(p, faults), encoding=None, sftp_factory=True)
    proxy = Proxy(server.sockets[0].getsockname()[1])
    port = await proxy.start()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{port} {host_key.export_public_key().decode()}")
    import getpass

    host = SSHHost("127.0.0.1", user=getpass.getuser(), port=port, keepalive_interval=0.2,
                   options=SSHOptions("/dev/null", (str(tmp_path / "id"),), str(kh)))
    await host.connect()
    try:
        yield Rig(host, faults, proxy)
    finally:
        await host.close()
        for conn in faults.conns:
            conn.abort()
        await proxy.close()
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.1)  # let the aborted sessions' tasks finish (their tails are killed)
        gc.collect()


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


async def test_exit_codes_stderr_and_timeouts(rig: Rig) -> None:
    res = await rig.host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (res.exit_status, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert (await rig.host.run(["no-such-command-xyz"])).exit_status == 127
    with pytest.raises(RemoteCommandError, match="exited with status 3"):
        await rig.host.run(["sh", "-c", "exit 3"], check=True)
    with pytest.raises(RemoteCommandError, match="did not finish"):
        await rig.host.run(["sleep", "5"], timeout=0.3)


async def test_closed_notifier_channel_falls_back_to_polling(rig: Rig, tmp_path: Path) -> None:
    rig.faults.close_notifier = True
    log = tmp_path / "a.log"
    log.write_text("")
    out = Collected()
    async with running(LogTail(rig.host, str(log), from_start=True), out):
        await wait_for(out, lambda o: bool(o.states))
        append(log, "".join(f"x{i}\n" for i in range(50)))
        await wait_for(out, lambda o: len(o.lines) == 50)
    assert out.lines == [f"x{i}" for i in range(50)]


async def test_dropped_connection_and_stalled_link_resume_without_loss_or_repeat(rig: Rig, tmp_path: Path) -> None:
    log = tmp_path / "b.log"
    log.write_text("")
    out = Collected()
    expected: list[str] = []

    def write(tag: str, n: int) -> None:
        for i in range(n):
            append(log, f"{tag}{i}\n")
            expected.append(f"{tag}{i}")

    async with running(LogTail(rig.host, str(log), from_start=True), out):
        await wait_for(out, lambda o: bool(o.states))
        write("a", 100)
        await wait_for(out, lambda o: len(o.lines) == 100)
        rig.faults.conns[-1].abort()  # the server drops the connection
        write("b", 100)
        await wait_for(out, lambda o: len(o.lines) == 200)
        rig.proxy.freeze()  # the link stalls: no data, no FIN; only keepalives can tell
        write("c", 100)
        await wait_for(out, lambda o: len(o.lines) == 300)
    assert out.lines == expected
    assert sum(s.state is ConnState.RECONNECTING for s in out.states) >= 2


async def test_host_gone_is_reported_reconnecting_then_lost_and_comes_back(rig: Rig, tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text("one\n")
    out = Collected()
    assert rig.proxy.server is not None
    port = rig.proxy.server.sockets[0].getsockname()[1]
    async with running(LogTail(rig.host, str(log), from_start=True, lost_after=0.5), out):
        await wait_for(out, lambda o: o.lines == ["one"])
        rig.proxy.server.close()  # nothing listens any more: every reconnect is refused
        await rig.proxy.server.wait_closed()
        rig.proxy.freeze()
        rig.faults.conns[-1].abort()
        await wait_for(out, lambda o: any(s.state is ConnState.LOST for s in o.states))
        append(log, "two\n")
        rig.proxy.server = await asyncio.start_server(rig.proxy._handle, "127.0.0.1", port)  # back up
        await wait_for(out, lambda o: o.lines == ["one", "two"])
    states = [s.state for s in out.states]
    assert ConnState.RECONNECTING in states
    assert any("refused" in s.detail for s in out.states if s.state is not ConnState.CONNECTED)
    assert states[-1] is ConnState.CONNECTED
