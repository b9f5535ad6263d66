"""One long-running `sh` per connection that serves positioned reads for the exec fallback (no SFTP)
and every `stat` (the tail's identity checks: a round trip each instead of a channel and a login shell).

Opening an SSH channel and a login shell per read costs 100+ ms on a busy host; this loop costs one
channel per connection and a `stat`/`tail`/`head` per read. Requests are one line on its stdin:

    R <inode|-> <offset> <length> <path>     a positioned read of <path>, checked to be <inode>
    L <inode> - - <folder>                    the path in <folder> with that inode (rotated by rename)
    I - - - <path>                            `stat -L` of <path>: its size, inode and mtime

A read answers `S <status> <inode> <size> <n>`, then exactly n bytes, then `T <size after the read>`:
n is min(length, size - offset) from the same open descriptor, the bytes are padded to n if the file
shrank meanwhile, and the trailer shows that (the client then keeps only the bytes below the new size).
Status 65: the path is another inode now; 66: no such file; 77: cannot open or stat it. A locate answers
`P <path>` (empty: not found), a stat `F <size> <inode> <mtime>` (`F` alone: none). Paths go in as data, never as shell code; a path with a newline or
surrounding blanks cannot be framed in a line and takes the one-shot exec path instead (ssh.files).
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import asyncssh

from spectui.sources.ssh.errors import host_error

LOOP_SH = (
    'export LC_ALL=C; '
    'while read -r op ino off len p; do case $op in '
    'R) ok=; { ok=1; h=$(stat -L -c "%i %s" /dev/fd/3) || { echo "S 77 0 0 0"; continue; }; '
    'i=${h%% *}; s=${h#* }; '
    'if [ "$ino" != - ] && [ "$ino" != "$i" ]; then echo "S 65 $h 0"; continue; fi; '
    'n=$((s - off)); [ "$n" -lt 0 ] && n=0; [ "$n" -gt "$len" ] && n=$len; echo "S 0 $h $n"; '
    'if [ "$n" -gt 0 ]; then { tail -c +$((off + 1)) <&3 | head -c "$n"; head -c "$n" /dev/zero; } '
    '| head -c "$n"; fi; echo "T $(stat -L -c %s /dev/fd/3 || echo 0)"; } 3<"$p" 2>/dev/null; '
    'if [ -z "$ok" ]; then if [ -e "$p" ]; then echo "S 77 0 0 0"; else echo "S 66 0 0 0"; fi; fi;; '
    'L) r=$(find "$p" -maxdepth 1 -inum "$ino" 2>/dev/null | head -n 1); echo "P $r";; '
    'I) echo "F $(stat -L -c "%s %i %Y" -- "$p" 2>/dev/null)";; '
    '*) echo "S 77 0 0 0";; esac; done'
)


def framable(path: str) -> bool:
    """Whether `path` survives `read -r` as the last field of a request line."""
    return bool(path) and "\n" not in path and "\r" not in path and path == path.strip()


class ExecReader:
    """The client side of LOOP_SH on one connection; one request at a time."""

    def __init__(self, conn: Any, name: str) -> None:
        self._conn = conn
        self._name = name
        self._proc: Any = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Start the loop now (its channel's start-up can overlap other work)."""
        async with self._lock:
            try:
                await self._start()
            except (asyncssh.Error, OSError) as exc:
                self.close()
                raise host_error(exc, self._name) from None

    async def _start(self) -> Any:
        if self._proc is None:
            self._proc = await self._conn.create_process(shlex.join(["sh", "-c", LOOP_SH]), encoding=None)
        return self._proc

    async def _ask(self, line: str) -> Any:
        proc = await self._start()
        proc.stdin.write(line.encode(errors="surrogateescape") + b"\n")
        return proc

    async def read(self, path: str, inode: int | None, offset: int, length: int
                   ) -> tuple[int, tuple[int, int] | None, bytes]:
        """(status, (inode, size), data): as ssh.files.SSHFiles.exec_read."""
        async with self._lock:
            try:
                proc = await self._ask(f"R {'-' if inode is None else inode} {offset} {max(0, length)} {path}")
                head = (await proc.stdout.readuntil(b"\n")).split()
                status, ino, size, n = (int(x) for x in head[1:5])
                data = await proc.stdout.readexactly(n) if n else b""
                if status == 0:
                    after = int((await proc.stdout.readuntil(b"\n")).split()[1])
                    if after < offset + n:  # shrank during the read: the padding is not the file's
                        data, size = data[: max(0, after - offset)], after
            except (asyncssh.Error, OSError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise host_error(exc if not isinstance(exc, asyncio.IncompleteReadError)
                                 else ConnectionError("reader channel closed"), self._name) from None
            except (ValueError, IndexError):
                self.close()
                raise host_error(ConnectionError("reader protocol error"), self._name) from None
            return status, (ino, size) if status in (0, 65) else None, data

    async def locate(self, folder: str, inode: int) -> str | None:
        async with self._lock:
            try:
                proc = await self._ask(f"L {inode} - - {folder}")
                line = await proc.stdout.readuntil(b"\n")
            except (asyncssh.Error, OSError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise host_error(ConnectionError(str(exc) or "reader channel closed"), self._name) from None
            found = line[2:-1].decode(errors="surrogateescape")
            return found or None

    async def stat(self, path: str) -> tuple[int, int, float] | None:
        """(size, inode, mtime) of `path` after symlinks, None when there is no such file."""
        async with self._lock:
            try:
                proc = await self._ask(f"I - - - {path}")
                line = await proc.stdout.readuntil(b"\n")
            except (asyncssh.Error, OSError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise host_error(ConnectionError(str(exc) or "reader channel closed"), self._name) from None
        fields = line.split()
        if not fields or fields[0] != b"F":
            self.close()
            raise host_error(ConnectionError("reader protocol error"), self._name)
        try:
            size, inode, mtime = fields[1:]
            return int(size), int(inode), float(mtime)
        except ValueError:
            return None

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.close()
