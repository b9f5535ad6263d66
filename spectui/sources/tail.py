"""LogTail: follow a log file by name over any Host, by byte offset, losing and repeating no line.

Reads are positioned reads on an open handle (os.pread locally, SFTP remotely) from an offset spectui
tracks: `offset` is always the end of the last complete line handed out, and a partial last line is held
until its newline arrives. After a dropped connection the tail reconnects with backoff, reopens the file
and resumes at `offset`, so nothing is lost or repeated. Rotation is detected by identity: a rename makes
the path's inode differ from the followed one (the old handle is drained to its end first, then the new
file is followed from its start); copytruncate shows as the file shrinking below the read position. A
rename while the connection is down is found on reconnect: the old inode is looked up in the log's folder
(`host.locate`) and read to its end before the new file, so the lines written between the drop and the
rename are not lost. The host's transport (SFTP or exec reads) is said once, in the connected message.
The host's notifier wakes the loop when the file changes (a remote `tail -F` or a local poll); a slow
periodic check catches anything a notifier missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import time
from collections.abc import AsyncIterator
from typing import Any

from spectui.errors import AuthError, HostError, HostKeyError
from spectui.sources.base import ConnState, FileStat, Host, TailEvent, TailLines, TailState

CHUNK = 256 * 1024
MAX_PARTIAL = 1024 * 1024  # a "line" longer than this is handed out without its newline
HEADER_MARK = b"server_args="  # a launch's start-up line (core.log.fields reads it)
BACKOFF = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class LogTail:
    """Async iterator of TailLines / TailState for one file on one host."""

    def __init__(
        self,
        host: Host,
        path: str,
        *,
        from_start: bool = False,
        backfill_lines: int = 200,
        identity_check: float = 5.0,
        lost_after: float = 30.0,
        missing_retry: float = 1.0,
        launch_header: bool = False,
    ) -> None:
        self.host = host
        self.path = path
        self.from_start = from_start
        self.backfill_lines = backfill_lines
        # On attach, also hand out the current launch's server_args line when the backfill misses it (a
        # server up for hours): the cockpit's effective config and its override rules need it.
        self.launch_header = launch_header
        self.identity_check = identity_check  # seconds between identity checks without a notifier hint
        self.lost_after = lost_after  # reconnecting longer than this is reported as "lost"
        self.missing_retry = missing_retry
        self.offset = 0  # end of the last complete line handed out
        self.next_line = 1  # number (in the file) of the next complete line
        self.inode: int | None = None
        self._partial = b""
        self._told: str | None = None  # the host's transport note, once said

    def __aiter__(self) -> AsyncIterator[TailEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[TailEvent]:
        failing_since: float | None = None
        attempt = 0
        reconnect = False
        while True:
            try:
                if reconnect:
                    await self.host.reconnect()
                    reconnect = False
                async for ev in self._session():
                    if isinstance(ev, TailState) and ev.state is ConnState.CONNECTED:
                        failing_since, attempt = None, 0
                    yield ev
            except (HostKeyError, AuthError):
                raise  # retrying cannot fix a key or a permission: the caller says what to do
            except HostError as exc:
                now = time.monotonic()
                failing_since = failing_since or now
                lost = now - failing_since >= self.lost_after
                yield TailState(ConnState.LOST if lost else ConnState.RECONNECTING, str(exc))
                await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
                attempt += 1
                reconnect = True
            except FileNotFoundError:
                yield TailState(ConnState.CONNECTED, f"log file {self.path} is missing on {self.host.name}; "
                                "waiting for it to appear (check the path)")
                await asyncio.sleep(self.missing_retry)
            except PermissionError:
                yield TailState(ConnState.CONNECTED, f"no permission to read {self.path} on {self.host.name}; "
                                "connect as its owner or root")
                await asyncio.sleep(self.missing_retry * 5)

    async def _session(self) -> AsyncIterator[TailEvent]:
        """One connection's worth of following: open, position, then read on every wake-up."""
        st, f = await self._stat_and_open()
        notifier = None
        try:
            size = await f.size()
            self._partial = b""
            announced = False
            if self.inode is None:
                self.inode = st.inode
                yield TailState(ConnState.CONNECTED, self._following())
                announced = True
                if not self.from_start:
                    async for ev in self._backfill(f, size):
                        yield ev
            elif st.inode != self.inode:
                # Renamed while the connection was down: the old file (same inode, same folder) may hold
                # lines written between the drop and the rename. Read it to its end, then the new one.
                old = await self._locate(self.inode)
                if old is not None:
                    async for ev in self._finish(old):
                        yield ev
                    detail = (f"log was rotated while disconnected; read the rest of {old}, now following "
                              "the new file from its start")
                else:
                    detail = ("log was rotated while disconnected and the old file is gone from its folder; "
                              "following the new file from its start (lines written to the old one "
                              "meanwhile are not shown)")
                self._restart(st.inode)
                yield TailState(ConnState.CONNECTED, detail, rotated=True)
            elif size < self.offset:
                self._restart(st.inode)
                yield TailState(ConnState.CONNECTED, "log was truncated; following it from its start",
                                rotated=True)
            notifier = await self.host.notifier(self.path)
            if not announced:
                yield TailState(ConnState.CONNECTED, self._following())
            # A notifier starts watching a moment after it starts: check once soon, in case a
            # rotation fell into that gap, then every `identity_check` seconds or on a hint. The check
            # (a remote `stat`, ~100s of ms over SSH) runs beside the reads so it never delays a line.
            last_check = time.monotonic() - self.identity_check + min(1.0, self.identity_check)
            check: asyncio.Task[FileStat | None] | None = None
            recheck = False
            try:
                while True:
                    async for ev in self._drain(f):
                        yield ev
                    hint = await notifier.wait(0.25 if check else 1.0)
                    if hint or time.monotonic() - last_check >= self.identity_check:
                        pos = self.offset + len(self._partial)
                        if await f.size() < pos:  # copytruncate
                            self._restart(self.inode)
                            yield TailState(ConnState.CONNECTED, "log was truncated; following it from its start",
                                            rotated=True)
                            continue
                        if check is None:
                            last_check = time.monotonic()
                            check = asyncio.ensure_future(self.host.stat(self.path))
                        else:
                            recheck = True  # a hint during a check: the answer may predate it
                    if check is None or not check.done():
                        continue
                    st, check = check.result(), None
                    if recheck:
                        recheck, last_check = False, 0.0
                    if st is not None and st.inode != self.inode:  # rotated by rename: finish the old file
                        async for ev in self._drain(f):
                            yield ev
                        if self._partial:
                            yield self._emit([self._partial])
                        old, f = f, None  # closed once: a local fd number may be reused at once
                        await old.close()
                        st, f = await self._stat_and_open()  # the inode of what is opened, not of what was seen
                        self._restart(st.inode)
                        yield TailState(ConnState.CONNECTED, "log was rotated; following the new file",
                                        rotated=True)
            finally:
                if check is not None:
                    check.cancel()
                    with contextlib.suppress(BaseException):
                        await check
        finally:
            if f is not None:
                await f.close()
            if notifier is not None:
                await notifier.close()

    async def _stat_and_open(self) -> tuple[FileStat, Any]:
        """An open handle of the log and the identity (inode) of the very file that handle reads.

        The identity must be the handle's, not the path's: a rotation landing between an `open` and a
        `stat` asked beside it (a window a busy machine widens) would pair the rotated file's handle with
        the new file's inode, and the tail would read the rotated file again from its start, then stay on
        it, losing the new file. A host that can tell (`open_identified`: SSH) does; otherwise the path
        is stat'ed before and after the open, and a different inode means opening again."""
        identified = getattr(self.host, "open_identified", None)
        if identified is not None:
            return await identified(self.path)  # type: ignore[no-any-return]
        for _ in range(5):
            before = await self.host.stat(self.path)
            if before is None:
                raise FileNotFoundError(self.path)
            f = await self.host.open(self.path)
            try:
                after = await self.host.stat(self.path)
            except BaseException:
                with contextlib.suppress(Exception):  # on a dropped link the close fails too
                    await f.close()
                raise
            if after is not None and after.inode == before.inode:
                return after, f
            with contextlib.suppress(Exception):
                await f.close()
        raise FileNotFoundError(self.path)  # replaced on every try: looked at again after a pause

    def _following(self) -> str:
        """The connected message; it says how the host reads files the first time that is known."""
        text = f"following {self.path} on {self.host.name}"
        note = getattr(self.host, "transport_note", None)
        if isinstance(note, str) and note != self._told:
            self._told = note
            text += f" ({note})"
        return text

    async def _locate(self, inode: int | None) -> str | None:
        """Where the followed inode went: a path in the log's folder (not the log's own path), or None."""
        locate = getattr(self.host, "locate", None)
        if inode is None or locate is None:
            return None
        with contextlib.suppress(HostError, OSError, ValueError):
            found = await locate(posixpath.dirname(self.path) or ".", inode)
            if found and posixpath.normpath(found) != posixpath.normpath(self.path):
                return str(found)
        return None

    async def _finish(self, path: str) -> AsyncIterator[TailLines]:
        """Read the rotated-away file `path` from the tracked offset to its end (its last line too)."""
        try:
            f = await self.host.open(path)
        except (FileNotFoundError, PermissionError):
            return
        try:
            if await f.size() < self.offset:
                return  # truncated before it was renamed: nothing there is after our offset
            async for ev in self._drain(f):
                yield ev
            if self._partial:
                yield self._emit([self._partial])
        finally:
            await f.close()

    def _restart(self, inode: int | None) -> None:
        self.inode, self.offset, self.next_line, self._partial = inode, 0, 1, b""

    def _emit(self, pieces: list[bytes], *, backfill: bool = False) -> TailLines:
        """Hand out `pieces` (each a line with its newline, the last maybe without) and advance."""
        consumed = sum(len(p) for p in pieces)
        lines = tuple(p.removesuffix(b"\n").removesuffix(b"\r").decode(errors="replace") for p in pieces)
        first = self.next_line
        self.offset += consumed
        self.next_line += len(lines)
        self._partial = self._partial[consumed:] if not backfill else self._partial
        return TailLines(lines, first, self.offset, backfill)

    async def _drain(self, f) -> AsyncIterator[TailLines]:  # type: ignore[no-untyped-def]
        """Read from the current position to the end; hand out complete lines."""
        while True:
            data = await f.read(self.offset + len(self._partial), CHUNK)
            if not data:
                return
            self._partial += data
            cut = self._partial.rfind(b"\n") + 1
            if cut == 0 and len(self._partial) >= MAX_PARTIAL:
                cut = len(self._partial)
            if cut:
                pieces = _split(self._partial[:cut])
                yield self._emit(pieces)
            if len(data) < min(CHUNK, 64 * 1024):
                return  # a short read is the end for now (a server may cap one read below CHUNK)
            await asyncio.sleep(0)  # a local read never suspends: let timers and cancellation in

    async def _backfill(self, f, size: int) -> AsyncIterator[TailLines]:  # type: ignore[no-untyped-def]
        """Position at the end of the last complete line; hand out the last N lines for context."""
        tail = b""
        start = size
        want = self.backfill_lines + 1
        while start > 0 and tail.count(b"\n") < want:
            step = min(CHUNK, start)
            start -= step
            tail = await f.read(start, step) + tail
        end = start + tail.rfind(b"\n") + 1  # end of the last complete line
        complete = tail[: end - start]
        pieces = _split(complete)[-self.backfill_lines :] if self.backfill_lines else []
        first_offset = end - sum(len(p) for p in pieces)
        self.offset = first_offset
        header = None
        if self.launch_header and first_offset > 0 and not any(HEADER_MARK in p for p in pieces):
            # beside the line count (each one command on the host): over SSH no extra round trip
            count, header = await asyncio.gather(self._count_lines(f, first_offset),
                                                 self._launch_header(first_offset))
        else:
            count = await self._count_lines(f, first_offset)
        self.next_line = count + 1
        self._partial = b""
        if header is not None:
            yield TailLines((header[1],), header[0], first_offset, backfill=True, header=True)
        if pieces:
            yield self._emit(pieces, backfill=True)
        self._partial = tail[end - start :]
        if len(self._partial) >= MAX_PARTIAL:
            self._partial = b""

    async def _launch_header(self, end: int) -> tuple[int, str] | None:
        """The last `server_args=` line in the first `end` bytes, with its number: one `grep -F` on the
        host (a 1 GB log reads in about a second). None when there is none or the host cannot run it."""
        script = 'head -c "$1" -- "$2" | grep -n -a -F -e "$3" | tail -n 1'
        with contextlib.suppress(HostError, OSError, ValueError):
            res = await self.host.run(["sh", "-c", script, "sh", str(end), self.path, HEADER_MARK.decode()],
                                      timeout=120)
            number, sep, text = res.stdout.rstrip("\n").partition(":")
            if res.exit_status == 0 and sep and number.isdigit():
                return int(number), text.removesuffix("\r")
        return None

    async def _count_lines(self, f, end: int) -> int:  # type: ignore[no-untyped-def]
        """Newlines in the first `end` bytes: one `head | wc -l` on the host, else read and count."""
        if end == 0:
            return 0
        with contextlib.suppress(HostError, OSError, ValueError):
            res = await self.host.run(["sh", "-c", 'head -c "$1" -- "$2" | wc -l', "sh", str(end), self.path],
                                      timeout=120)
            if res.exit_status == 0:
                return int(res.stdout.strip())
        count, pos = 0, 0
        while pos < end:
            data = await f.read(pos, min(4 * CHUNK, end - pos))
            if not data:
                break
            count += data.count(b"\n")
            pos += len(data)
        return count


def _split(buf: bytes) -> list[bytes]:
    """Split on b"\\n" only (a bare \\r is part of a line, as `wc -l` counts), keeping the newlines."""
    parts = [p + b"\n" for p in buf.split(b"\n")]
    parts[-1] = parts[-1][:-1]
    if not parts[-1]:
        parts.pop()
    return parts
