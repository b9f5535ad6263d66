"""The Host seam: what every source (local machine, SSH host) offers, and the runtime values it yields.

`Host` is a Protocol, so LocalHost and SSHHost share no base class; tests can pass any object with
these methods. Paths are host paths (str), argv is a list (quoted with shlex only by the SSH host).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of a command run on a host."""

    exit_status: int
    stdout: str
    stderr: str


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a tail needs to know about a file: its size, its identity (inode) and its mtime."""

    size: int
    inode: int
    mtime: float


class ConnState(StrEnum):
    """The `state` of a watch `connection` event (CONTRACTS.md)."""

    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class TailLines:
    """Complete lines read from the log (no trailing newline, decoded with errors="replace").

    `first_line` is the 1-based number of `lines[0]` in the file being followed; `end_offset` is the byte
    offset just after the last line's newline: resuming there loses and repeats nothing.
    `backfill` marks lines read on attach for context (they were in the file before the tail started).
    `header` marks the current launch's start-up line (its `server_args=`) found before the backfill on
    attach: an analysis input, not part of the contiguous stream (the next event does not follow it).
    """

    lines: tuple[str, ...]
    first_line: int
    end_offset: int
    backfill: bool = False
    header: bool = False


@dataclass(frozen=True, slots=True)
class TailState:
    """A change in the tail's connection or file: `state` is a ConnState, `detail` a one-line message.

    `rotated` is True on the event that announces a new file (rotation by rename, or truncation).
    """

    state: ConnState
    detail: str = ""
    rotated: bool = False


TailEvent = TailLines | TailState


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """One SGLang server found on a host (the main process, not its `sglang::` children)."""

    pid: int
    pgid: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    log_path: str | None
    port: int | None
    host_addr: str
    gpu_ids: tuple[int, ...] = ()
    stderr_path: str | None = None  # fd 2 target when it differs from fd 1
    program: str = field(default="")  # "python -m sglang.launch_server", "sglang serve", "python -m spectui.sim"
    uid: int | None = None  # the process's owner (effective uid, /proc/PID/status); None: not known
    user: str = ""  # the owner's name on the host ("" when it has none)


@runtime_checkable
class RemoteFile(Protocol):
    """An open file on a host: positioned reads and fstat keep following the same inode after a rename."""

    async def size(self) -> int: ...
    async def read(self, offset: int, length: int) -> bytes: ...
    async def close(self) -> None: ...


@runtime_checkable
class ChangeNotifier(Protocol):
    """Wakes a tail when the file may have changed; `wait` returns True when a rotation hint was seen."""

    async def wait(self, timeout: float) -> bool: ...
    async def close(self) -> None: ...


@runtime_checkable
class Host(Protocol):
    """A machine spectui works on: run commands, read files, forward ports."""

    name: str  # "local", "root@gpu1"
    read_only: bool

    async def run(
        self, argv: Sequence[str], *, timeout: float | None = None, check: bool = False,
        input: str | None = None,  # standard input (default none); every host's run takes it
    ) -> RunResult: ...
    async def stat(self, path: str) -> FileStat | None: ...
    async def read_range(self, path: str, offset: int, length: int) -> bytes: ...
    async def read_file(self, path: str) -> bytes: ...
    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int: ...
    async def close(self) -> None: ...

    # Added for LogTail (docs/INTERFACES.md: "add freely").
    async def open(self, path: str) -> RemoteFile: ...
    async def notifier(self, path: str) -> ChangeNotifier: ...
    async def connect(self) -> None: ...
    async def reconnect(self) -> None: ...


@runtime_checkable
class FileReader(Protocol):
    """File-read primitives every host offers (LocalHost; SSHHost over SFTP or, refused, exec'd reads).

    Callers that inspect files (a checkpoint's safetensors header, a config) use these and never care
    how the bytes travel. Missing paths: `file_size` None, `exists` False, the others FileNotFoundError.
    """

    async def read_range(self, path: str, offset: int, length: int) -> bytes: ...  # fewer bytes at EOF
    async def read_file(self, path: str) -> bytes: ...
    async def file_size(self, path: str) -> int | None: ...
    async def exists(self, path: str) -> bool: ...
    async def listdir(self, path: str) -> list[str]: ...  # names, sorted, no . / ..
    async def locate(self, folder: str, inode: int) -> str | None: ...  # path in folder with that inode


def check_result(argv: Sequence[str], result: RunResult, host_name: str) -> RunResult:
    """Raise RemoteCommandError for a non-zero exit (used by `run(check=True)` on every host)."""
    from spectui.errors import RemoteCommandError

    if result.exit_status != 0:
        tail = result.stderr.strip().splitlines()[-1:] or [""]
        raise RemoteCommandError(
            f"{host_name}: `{argv[0]}` exited with status {result.exit_status}: {tail[0][:200]}",
            exit_status=result.exit_status,
            stderr=result.stderr,
        )
    return result
