"""SSHHost: the Host interface over asyncssh with OpenSSH semantics (config, agent, known_hosts, jumps).

One SSH connection per host carries everything: commands (`run`), file reads (ssh.files: an SFTP session
for positioned reads on an open handle, or exec'd reads of the same inode where the server refuses SFTP),
local port forwards for the HTTP probe, and one long-running `tail -c1 -F` per followed file used only as
a wake-up signal (ssh.notify). No process is spawned per poll while SFTP is there.

Host keys are checked as OpenSSH would (hostkeys, ssh.dest): every known_hosts file in force,
StrictHostKeyChecking, a changed key always refused. A ProxyJump in the config is opened here, hop by
hop, with the same identities and the same host-key rules (so `--known-hosts` covers the hops too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncssh

from spectui.errors import ConnectError, HostKeyError, RemoteCommandError
from spectui.sources.base import FileStat, RunResult, check_result
from spectui.sources.hostkeys import HostKeyCheck
from spectui.sources.ssh.dest import Destination, destination, parse_jump
from spectui.sources.ssh.errors import host_error as _host_error
from spectui.sources.ssh.files import ExecFile, SFTPFile, SSHFiles
from spectui.sources.ssh.notify import NOTIFY_WINDOW, TailNotifier, _WakeSession
from spectui.sources.ssh.reader import framable

CONNECT_TIMEOUT = 10.0
KEEPALIVE_INTERVAL = 5.0  # a stalled link is declared dead after 3 missed keepalives (15 s)
MAX_JUMPS = 8
log = logging.getLogger(__name__)

__all__ = ["SSHHost", "SSHOptions", "SFTPFile", "ExecFile", "TailNotifier"]


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
        self._jumps: list[Any] = []
        self._listeners: list[Any] = []
        self.files = SSHFiles(self)
        self.transport_note: str | None = None  # how files are read, once known: see on_transport
        self._said_transport: str | None = None

    # -- connection --------------------------------------------------------------------------------

    def _base_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT, "keepalive_interval": self.keepalive_interval,
                              "keepalive_count_max": 3}
        if self.options.ssh_config:
            kw["config"] = [self.options.ssh_config]
        if self.options.identities:
            kw["client_keys"] = list(self.options.identities)
        return kw

    async def _connect_one(self, host: str, user: str | None, port: int | None, label: str,
                           tunnel: Any, depth: int) -> Any:
        """One hop: its own ProxyJump chain first (from the config), then this connection."""
        dest = destination(host, user, port, self.options)
        if tunnel is None and dest.proxy_jump and depth < MAX_JUMPS:
            tunnel = await self._open_jumps(dest, label, depth)
        check = HostKeyCheck(dest, label)
        kw = self._base_kwargs() | check.connect_kwargs()
        if user:
            kw["username"] = user
        if port:
            kw["port"] = port
        kw["tunnel"] = tunnel if tunnel is not None else ()
        try:
            conn = await asyncssh.connect(host, **kw)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise check.refusal or _host_error(exc, label) from None
        except asyncssh.PermissionDenied as exc:
            check.record()  # the key exchange was verified before authentication failed
            raise _host_error(exc, label) from None
        except HostKeyError:
            raise
        except Exception as exc:
            raise _host_error(exc, label) from None
        try:
            check.record()
        except HostKeyError:
            conn.close()
            raise
        return conn

    async def _open_jumps(self, dest: Destination, label: str, depth: int) -> Any:
        """Connect through every ProxyJump hop of `dest`, in order; returns the last hop's connection."""
        tunnel = None
        for hop in (dest.proxy_jump or "").split(","):
            if not hop.strip():
                continue
            user, name, port = parse_jump(hop)
            hop_label = f"{hop.strip()} (ProxyJump of {label})"
            conn = await self._connect_one(name, user, port, hop_label, tunnel, depth + 1)
            self._jumps.append(conn)
            tunnel = conn
        return tunnel

    async def connect(self) -> None:
        try:
            self._conn = await self._connect_one(self.host, self.user, self.port, self.name, None, 0)
        except BaseException:
            await self._drop()
            raise
        self.files.reset()

    async def reconnect(self) -> None:
        await self._drop()
        await self.connect()

    async def _drop(self) -> None:
        for lst in self._listeners:
            with contextlib.suppress(Exception):
                lst.close()
        self._listeners.clear()
        for conn in [self._conn, *reversed(self._jumps)]:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
                    async with asyncio.timeout(2):
                        await conn.wait_closed()
        self._conn = None
        self._jumps.clear()
        self.files.reset()

    async def close(self) -> None:
        await self._drop()

    def _need(self) -> Any:
        if self._conn is None:
            raise ConnectError(f"{self.name}: not connected")
        return self._conn

    # -- transport ---------------------------------------------------------------------------------

    @property
    def transport(self) -> str | None:
        """How files are read on this connection: "sftp", "exec" (SFTP refused), None (not yet known)."""
        return self.files.transport

    def on_transport(self, transport: str, reason: str) -> None:
        """Called by SSHFiles when a connection's transport is decided; logs it when it changes."""
        if transport == "exec":
            self.transport_note = (f"the server refused SFTP ({reason or 'no sftp subsystem'}); reading "
                                   "files with exec'd `tail -c`/`head -c` at tracked offsets")
        else:
            self.transport_note = "reading files over SFTP"
        if transport != self._said_transport:
            self._said_transport = transport
            log.info("%s: %s", self.name, self.transport_note)

    # -- Host protocol -----------------------------------------------------------------------------

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = False, input: str | None = None
    ) -> RunResult:
        """argv on the host; `input`: its standard input (a relaunch's environment: never on a command line)."""
        argv = list(argv)
        res = await self._exec(argv, timeout, None, input)
        status = res.exit_status if res.exit_status is not None else 255
        result = RunResult(status, _text(res.stdout), _text(res.stderr))
        return check_result(argv, result, self.name) if check else result

    async def run_bytes(self, argv: Sequence[str], *, timeout: float | None = None) -> tuple[int, bytes]:
        """(exit status, raw stdout) of argv: for the exec'd file reads, whose bytes are not text."""
        res = await self._exec(list(argv), timeout, "bytes")
        status = res.exit_status if res.exit_status is not None else 255
        return status, bytes(res.stdout or b"")

    async def _exec(self, argv: list[str], timeout: float | None, raw: str | None, input: str | None = None) -> Any:
        kw: dict[str, Any] = {"timeout": timeout}
        if input is not None:
            kw["input"] = input
        if raw:
            kw["encoding"] = None
        try:
            return await self._need().run(shlex.join(argv), **kw)
        except asyncssh.TimeoutError:
            raise RemoteCommandError(f"{self.name}: `{argv[0]}` did not finish within {timeout:g} s") from None
        except (asyncssh.Error, OSError) as exc:
            raise _host_error(exc, self.name) from None

    async def stat(self, path: str) -> FileStat | None:
        if framable(path):
            return await self.files.stat(path)  # over the connection's read loop: one round trip
        res = await self.run(["stat", "-L", "-c", "%s %i %Y", "--", path])
        if res.exit_status != 0:
            return None
        try:
            size, inode, mtime = res.stdout.split()
            return FileStat(size=int(size), inode=int(inode), mtime=float(mtime))
        except ValueError:
            return None

    # File-read primitives, over SFTP or (refused) exec: see ssh.files.SSHFiles.
    async def open(self, path: str) -> SFTPFile | ExecFile:
        return await self.files.open(path)

    async def open_identified(self, path: str) -> tuple[FileStat, SFTPFile | ExecFile]:
        """An open handle of `path` and the identity (inode) of the file it reads, checked: see
        ssh.files.SSHFiles.open_identified. The tail opens its log with this."""
        return await self.files.open_identified(path, self.stat)

    async def read_range(self, path: str, offset: int, length: int) -> bytes:
        return await self.files.read(path, offset, length)

    async def read_file(self, path: str) -> bytes:
        return await self.files.read_all(path)

    async def file_size(self, path: str) -> int | None:
        return await self.files.size(path)

    async def exists(self, path: str) -> bool:
        return await self.files.exists(path)

    async def listdir(self, path: str) -> list[str]:
        return await self.files.listdir(path)

    async def locate(self, folder: str, inode: int) -> str | None:
        """The path in `folder` with this inode (where a rename moved a followed file), or None."""
        return await self.files.locate(folder, inode)

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
