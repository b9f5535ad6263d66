"""File reads on an SSH host: SFTP when the server offers it, exec'd coreutils when it refuses.

Both transports give the same primitives (`SSHFiles`: open, read, size, exists, listdir, locate) and the
same guarantee the tail builds on: an open file keeps reading the inode it opened, across a rename.
SFTP does that with an open handle. The exec fallback sends reads to one long-running `sh` loop per
connection (ssh.reader; a one-shot `sh -c` per read for a path it cannot frame in a line), which opens
the path on fd 3, checks the inode of what it opened (`stat -L /dev/fd/3`), and reads
`tail -c +OFFSET <&3 | head -c N` from that descriptor (GNU tail seeks on a regular file, so a read costs its bytes, not the offset). When
the path now names another file (rotated by rename) it finds the inode again in the same folder
(`find -maxdepth 1 -inum`) and reads there. Every argv element is quoted with shlex; the scripts are fixed
text taking the path as "$1", never spliced into the command line.
"""

from __future__ import annotations

import asyncio
import posixpath
from typing import Any

import asyncssh

from spectui.sources.base import FileStat
from spectui.sources.ssh.errors import host_error
from spectui.sources.ssh.reader import ExecReader, framable

# One line each: a login shell (csh too) gets them as one single-quoted word.
# $1 path, $2 expected inode ("" = any), $3 offset+1, $4 length. Out: "inode size\n" then the bytes.
# Exit 65: the path is another inode now; 66: no such file; 77: cannot open it.
READ_SH = ('{ h=$(stat -L -c "%i %s" /dev/fd/3) || exit 77; echo "$h"; '
           'case $2 in ""|"${h%% *}") ;; *) exit 65;; esac; [ "$4" -gt 0 ] || exit 0; '
           'tail -c +"$3" <&3 | head -c "$4"; exit 0; } 3<"$1"; [ -e "$1" ] || exit 66; exit 77')
# $1 folder, $2 inode. Out: the first path in the folder with that inode, NUL-terminated.
LOCATE_SH = 'find "$1" -maxdepth 1 -inum "$2" -print0 2>/dev/null'
# $1 folder. Out: every entry name (dot files too), NUL-terminated. Exit 66: not a folder.
LISTDIR_SH = ('cd -- "$1" 2>/dev/null || exit 66; for f in * .[!.]* ..?*; do '
              '{ [ -e "$f" ] || [ -L "$f" ]; } && printf "%s\\0" "$f"; done; exit 0')
GONE, MISSING, DENIED = 65, 66, 77
OPEN_TRIES = 5  # a log replaced this many times while being opened: give up for now (the tail retries)


class SFTPFile:
    """An open remote file (RemoteFile protocol) on the host's SFTP session."""

    def __init__(self, handle: Any, host_name: str) -> None:
        self._handle = handle
        self._name = host_name

    async def size(self) -> int:
        try:
            return int((await self._handle.stat()).size or 0)
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self._name) from None

    async def read(self, offset: int, length: int) -> bytes:
        try:
            return bytes(await self._handle.read(length, offset))
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self._name) from None

    async def close(self) -> None:
        # Not awaited: on a stalled or dropped link the answer may never come, and a tail being
        # cancelled must not wait for it. The handle dies with the connection anyway.
        task = asyncio.ensure_future(self._handle.close())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


class ExecFile:
    """An open remote file (RemoteFile protocol) read by exec'd commands, following its inode."""

    def __init__(self, files: SSHFiles, path: str, inode: int, size: int) -> None:
        self._files = files
        self.path = path
        self.inode = inode
        self._size = size

    async def _read(self, offset: int, length: int) -> bytes:
        for _ in range(3):
            status, head, data = await self._files.exec_read(self.path, self.inode, offset, length)
            if status == 0 and head is not None:
                self._size = head[1]
                return data
            if status == DENIED:
                raise PermissionError(self.path)
            found = await self._files.locate(posixpath.dirname(self.path) or ".", self.inode)
            if found is None:
                return b""  # deleted: nothing more will ever be read from it (the size stays the last seen)
            self.path = found
        return b""

    async def size(self) -> int:
        await self._read(0, 0)
        return self._size

    async def read(self, offset: int, length: int) -> bytes:
        return await self._read(offset, length)

    async def close(self) -> None:
        return None


class SSHFiles:
    """The file-read primitives of an SSH host, over SFTP or, where the server refuses SFTP, exec."""

    def __init__(self, host: Any) -> None:
        self.host = host  # SSHHost: _need(), name, on_transport()
        self._sftp: Any = None
        self.transport: str | None = None  # "sftp" | "exec", decided on the first read of a connection
        self._reader: ExecReader | None = None

    def reset(self) -> None:
        """A new connection: ask for SFTP again (the server may have been reconfigured)."""
        if self._reader is not None:
            self._reader.close()
        self._sftp, self.transport, self._reader = None, None, None

    def _loop(self, path: str) -> ExecReader | None:
        """The connection's read loop (ssh.reader), for a path it can frame; None: one exec per call."""
        if not framable(path):
            return None
        if self._reader is None:
            self._reader = ExecReader(self.host._need(), self.host.name)
        return self._reader

    async def sftp(self) -> Any:
        """The SFTP client, or None when this server refuses the subsystem (then exec is used)."""
        if self.transport == "exec":
            return None
        if self._sftp is None:
            conn = self.host._need()
            try:
                self._sftp = await conn.start_sftp_client()
            except (asyncssh.ChannelOpenError, asyncssh.SFTPError) as exc:
                if conn.is_closed():
                    raise host_error(exc, self.host.name) from None
                self.transport = "exec"
                why = str(exc.reason) if isinstance(exc, asyncssh.ChannelOpenError) else \
                    "its sftp-server exited at once"
                self.host.on_transport("exec", why)
                return None
            except (asyncssh.Error, OSError) as exc:
                raise host_error(exc, self.host.name) from None
            if self.transport is None:
                self.transport = "sftp"
                self.host.on_transport("sftp", "")
        return self._sftp

    async def _sh(self, script: str, *args: str) -> tuple[int, bytes]:
        return await self.host.run_bytes(["sh", "-c", script, "sh", *args])  # type: ignore[no-any-return]

    # -- exec primitives ------------------------------------------------------------------------------

    async def exec_read(self, path: str, inode: int | None, offset: int, length: int
                        ) -> tuple[int, tuple[int, int] | None, bytes]:
        """(status, (inode, size) or None, data) of one positioned read of `path` by exec."""
        loop = self._loop(path)
        if loop is not None:
            return await loop.read(path, inode, offset, length)
        status, out = await self._sh(READ_SH, path, "" if inode is None else str(inode), str(offset + 1),
                                     str(max(0, length)))
        line, nl, data = out.partition(b"\n")
        head = None
        if nl:
            try:
                ino, size = line.split()
                head = (int(ino), int(size))
            except ValueError:
                head = None
        if status == 0 and head is None:
            status = DENIED
        return status, head, data

    async def locate(self, folder: str, inode: int) -> str | None:
        """The path in `folder` whose inode is `inode` (where a rename moved a followed file), or None."""
        loop = self._loop(folder)
        if loop is not None:
            return await loop.locate(folder, inode)
        status, out = await self._sh(LOCATE_SH, folder, str(inode))
        name = out.split(b"\0", 1)[0]
        return name.decode(errors="surrogateescape") if status == 0 and name else None

    async def stat(self, path: str) -> FileStat | None:
        """`stat -L` of `path` (a `framable` one) through the connection's read loop, or None."""
        loop = self._loop(path)
        assert loop is not None, "stat over the read loop needs a path it can frame"
        got = await loop.stat(path)
        return None if got is None else FileStat(size=got[0], inode=got[1], mtime=got[2])

    async def open_identified(self, path: str, stat: Any) -> tuple[FileStat, SFTPFile | ExecFile]:
        """An open handle of `path` and the identity of the very file it reads.

        An exec'd handle knows the inode of the descriptor it opened. An SFTP handle does not (SFTP v3
        has no inodes), so the path is stat'ed before and after the open: the same inode both times
        means the handle reads it; a rename in between (a rotation) shows as two inodes and the open is
        done again. `stat` is the host's stat (over the read loop, which is started beside the SFTP
        session so the two start-ups overlap)."""
        loop = self._loop(path)
        warm = [asyncio.ensure_future(self.sftp())]
        if loop is not None:
            warm.append(asyncio.ensure_future(loop.start()))
        try:
            await asyncio.gather(*warm)
        except BaseException:
            for task in warm:
                task.cancel()
            await asyncio.gather(*warm, return_exceptions=True)
            raise
        for _ in range(OPEN_TRIES):
            if self.transport == "exec":
                f = await self.open(path)
                assert isinstance(f, ExecFile)
                return FileStat(size=f._size, inode=f.inode, mtime=0.0), f
            before = await stat(path)
            if before is None:
                raise FileNotFoundError(path)
            f = await self.open(path)
            try:
                after = await stat(path)
            except BaseException:
                await f.close()
                raise
            if after is not None and after.inode == before.inode:
                return after, f
            await f.close()  # replaced while it was being opened: open what the path names now
        raise host_error(ConnectionError(f"{path} was replaced {OPEN_TRIES} times while it was being opened"),
                         self.host.name)

    # -- the primitives -------------------------------------------------------------------------------

    async def open(self, path: str) -> SFTPFile | ExecFile:
        sftp = await self.sftp()
        if sftp is None:
            status, head, _ = await self.exec_read(path, None, 0, 0)
            if status == MISSING:
                raise FileNotFoundError(path)
            if status != 0 or head is None:
                raise PermissionError(path)
            return ExecFile(self, path, head[0], head[1])
        try:
            # block_size=0: one READ request per call. asyncssh's parallel reader would split a read
            # past EOF into requests whose EOF errors nobody retrieves (printed at exit).
            return SFTPFile(await sftp.open(path, "rb", block_size=0), self.host.name)
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(path) from None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(path) from None
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self.host.name) from None

    async def read(self, path: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes of `path` from `offset` (fewer at its end)."""
        f = await self.open(path)
        try:
            return await f.read(offset, length)
        finally:
            await f.close()

    async def read_all(self, path: str) -> bytes:
        f = await self.open(path)
        try:
            return await f.read(0, await f.size())
        finally:
            await f.close()

    async def size(self, path: str) -> int | None:
        """Size of `path` (after symlinks), None when it does not exist."""
        sftp = await self.sftp()
        if sftp is None:
            status, head, _ = await self.exec_read(path, None, 0, 0)
            if status == MISSING:
                return None
            if status != 0 or head is None:
                raise PermissionError(path)
            return head[1]
        try:
            return int((await sftp.stat(path)).size or 0)
        except asyncssh.SFTPNoSuchFile:
            return None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(path) from None
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self.host.name) from None

    async def exists(self, path: str) -> bool:
        sftp = await self.sftp()
        if sftp is None:
            status, _ = await self._sh('[ -e "$1" ] || [ -L "$1" ]', path)
            return status == 0
        try:
            return bool(await sftp.exists(path))
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self.host.name) from None

    async def listdir(self, path: str) -> list[str]:
        """Entry names in folder `path` (no `.` / `..`), sorted. FileNotFoundError when it is not one."""
        sftp = await self.sftp()
        if sftp is None:
            status, out = await self._sh(LISTDIR_SH, path)
            if status == MISSING:
                raise FileNotFoundError(path)
            return sorted(n.decode(errors="surrogateescape") for n in out.split(b"\0") if n)
        try:
            return sorted(n for n in await sftp.listdir(path) if n not in (".", ".."))
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(path) from None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(path) from None
        except (asyncssh.Error, OSError) as exc:
            raise host_error(exc, self.host.name) from None
