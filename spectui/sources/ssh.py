"""SSHHost: the Host interface over asyncssh with OpenSSH semantics (config, agent, strict known_hosts).

One SSH connection per host carries everything: commands (`run`), an SFTP session for positioned reads
(the tail reads by byte offset on an open handle, so a rename never confuses it), local port forwards
for the HTTP probe, and one long-running `tail -c1 -F` per followed file used only as a wake-up signal:
its channel is paused after the first byte, so it costs one small window of bandwidth per wake-up while
the bytes themselves come over SFTP from offsets spectui tracks. No process is spawned per poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncssh

from spectui.errors import ConnectError, RemoteCommandError
from spectui.sources.base import FileStat, RunResult, check_result
from spectui.sources.ssherrors import host_error as _host_error

CONNECT_TIMEOUT = 10.0
KEEPALIVE_INTERVAL = 5.0  # a stalled link is declared dead after 3 missed keepalives (15 s)
NOTIFY_WINDOW = 512  # bytes the wake-up `tail` may send before its channel blocks


@dataclass(frozen=True, slots=True)
class SSHOptions:
    """The SSH options of spectui.commands.sshopts.add_ssh_options."""

    ssh_config: str | None = None
    identities: tuple[str, ...] = ()
    known_hosts: str | None = None
    accept_new_host_key: bool = False

    @classmethod
    def from_args(cls, args: Any) -> SSHOptions:
        if args is None:
            return cls()
        return cls(
            ssh_config=getattr(args, "ssh_config", None),
            identities=tuple(getattr(args, "identity", None) or ()),
            known_hosts=getattr(args, "known_hosts", None),
            accept_new_host_key=bool(getattr(args, "accept_new_host_key", False)),
        )


class SFTPFile:
    """An open remote file (RemoteFile protocol) on the host's SFTP session."""

    def __init__(self, handle: Any, host_name: str) -> None:
        self._handle = handle
        self._name = host_name

    async def size(self) -> int:
        try:
            return int((await self._handle.stat()).size or 0)
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self._name) from None

    async def read(self, offset: int, length: int) -> bytes:
        try:
            return bytes(await self._handle.read(length, offset))
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self._name) from None

    async def close(self) -> None:
        # Not awaited: on a stalled or dropped link the answer may never come, and a tail being
        # cancelled must not wait for it. The handle dies with the connection anyway.
        task = asyncio.ensure_future(self._handle.close())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


class _WakeSession(asyncssh.SSHClientSession):
    """Session of the wake-up `tail`: any stdout byte means "the file grew"; stderr means "look again"."""

    def __init__(self) -> None:
        self.woken = False
        self.rotation_hint = False
        self.closed = False
        self.chan: Any = None
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, chan: Any) -> None:
        self.chan = chan

    def _wake(self) -> None:
        self.woken = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def data_received(self, data: Any, datatype: Any) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.rotation_hint = True  # "has been replaced", "file truncated", "has appeared"
        # Stop window adjusts until the tail has read: the remote tail blocks instead of streaming.
        self.chan.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()


class TailNotifier:
    """ChangeNotifier backed by a remote `tail -F` (inotify on the host, instant wake-ups)."""

    def __init__(self, chan: Any, session: _WakeSession) -> None:
        self._chan = chan
        self._session = session

    async def wait(self, timeout: float) -> bool:
        s = self._session
        if s.closed:
            await asyncio.sleep(timeout)  # notifier gone (no tail on the host): plain polling
            return True
        if not s.woken:
            # A bare future and a timer (not wait_for + Event): cancelling the tail is then immediate.
            loop = asyncio.get_running_loop()
            s.waiter = loop.create_future()
            timer = loop.call_later(timeout, s._wake)
            try:
                await s.waiter
            finally:
                timer.cancel()
                s.waiter = None
        s.woken = False
        hint, s.rotation_hint = s.rotation_hint, False
        if not s.closed:
            self._chan.resume_reading()
        return hint or s.closed

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()


class SSHHost:
    """A host over SSH. `await connect()` before use; `reconnect()` after a drop."""

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        options: SSHOptions | None = None,
        read_only: bool = False,
        keepalive_interval: float = KEEPALIVE_INTERVAL,
    ) -> None:
        self.host = host
        self.keepalive_interval = keepalive_interval
        self.user = user
        self.port = port
        self.options = options or SSHOptions()
        self.read_only = read_only
        self.name = f"{user}@{host}" if user else host
        if port:
            self.name += f":{port}"
        self._conn: Any = None
        self._sftp: Any = None
        self._listeners: list[Any] = []

    # -- connection --------------------------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT, "keepalive_interval": self.keepalive_interval,
                              "keepalive_count_max": 3}
        if self.user:
            kw["username"] = self.user
        if self.port:
            kw["port"] = self.port
        if self.options.ssh_config:
            kw["config"] = [self.options.ssh_config]
        if self.options.identities:
            kw["client_keys"] = list(self.options.identities)
        if self.options.known_hosts:
            kh = self.options.known_hosts
            # A known_hosts file not created yet trusts nothing (strict), it is not an error.
            kw["known_hosts"] = kh if os.path.exists(kh) else asyncssh.import_known_hosts("")
        return kw

    async def connect(self) -> None:
        try:
            self._conn = await asyncssh.connect(self.host, **self._connect_kwargs())
        except asyncssh.HostKeyNotVerifiable:
            from spectui.sources.hostkeys import handle_untrusted_key

            await handle_untrusted_key(self)  # refuses with the fingerprint, or records it (accept-new)
            try:
                self._conn = await asyncssh.connect(self.host, **self._connect_kwargs())
            except Exception as exc:
                raise _host_error(exc, self.name) from None
        except Exception as exc:
            raise _host_error(exc, self.name) from None
        self._sftp = None

    async def reconnect(self) -> None:
        await self._drop()
        await self.connect()

    async def _drop(self) -> None:
        for lst in self._listeners:
            with contextlib.suppress(Exception):
                lst.close()
        self._listeners.clear()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
                async with asyncio.timeout(2):
                    await self._conn.wait_closed()
        self._conn = None
        self._sftp = None

    async def close(self) -> None:
        await self._drop()

    def _need(self) -> Any:
        if self._conn is None:
            raise ConnectError(f"{self.name}: not connected")
        return self._conn

    async def _sftp_client(self) -> Any:
        if self._sftp is None:
            try:
                self._sftp = await self._need().start_sftp_client()
            except (asyncssh.Error, OSError) as exc:
                raise _host_error(exc, self.name) from None
        return self._sftp

    # -- Host protocol -----------------------------------------------------------------------------

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = False
    ) -> RunResult:
        argv = list(argv)
        try:
            res = await self._need().run(shlex.join(argv), timeout=timeout)
        except asyncssh.TimeoutError:
            raise RemoteCommandError(f"{self.name}: `{argv[0]}` did not finish within {timeout:g} s") from None
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self.name) from None
        status = res.exit_status if res.exit_status is not None else 255
        result = RunResult(status, _text(res.stdout), _text(res.stderr))
        return check_result(argv, result, self.name) if check else result

    async def stat(self, path: str) -> FileStat | None:
        res = await self.run(["stat", "-L", "-c", "%s %i %Y", "--", path])
        if res.exit_status != 0:
            return None
        try:
            size, inode, mtime = res.stdout.split()
            return FileStat(size=int(size), inode=int(inode), mtime=float(mtime))
        except ValueError:
            return None

    async def open(self, path: str) -> SFTPFile:
        sftp = await self._sftp_client()
        try:
            # block_size=0: one READ request per call. asyncssh's parallel reader would split a read
            # past EOF into requests whose EOF errors nobody retrieves (printed at exit).
            return SFTPFile(await sftp.open(path, "rb", block_size=0), self.name)
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(path) from None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(path) from None
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self.name) from None

    async def read_range(self, path: str, offset: int, length: int) -> bytes:
        f = await self.open(path)
        try:
            return await f.read(offset, length)
        finally:
            await f.close()

    async def read_file(self, path: str) -> bytes:
        f = await self.open(path)
        try:
            return await f.read(0, await f.size())
        finally:
            await f.close()

    async def notifier(self, path: str) -> TailNotifier:
        # -c1: the last byte comes at once, telling the tail the notifier is watching (no start-up race).
        cmd = f"exec tail -c1 -F -- {shlex.quote(path)}"
        try:
            chan, session = await self._need().create_session(
                _WakeSession, cmd, encoding=None, window=NOTIFY_WINDOW, max_pktsize=NOTIFY_WINDOW
            )
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self.name) from None
        return TailNotifier(chan, session)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        try:
            listener = await self._need().forward_local_port("127.0.0.1", 0, remote_host, remote_port)
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self.name) from None
        self._listeners.append(listener)
        return int(listener.get_port())


def _text(data: Any) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else str(data)
