"""A second process for `spectui check` on a big regular file: it counts chunks from the end of the file.

Nearly all of check's time on a big log is the bulk reader's counting passes (logbulk.segments: newlines,
decode, prefill and access markers, a C pass each). They are a pure function of a chunk's bytes, so one
forked worker computes them (reading the chunks itself with pread, at the same offsets), last chunk
first, while this process reads and parses from the start and claims each chunk as it gets to it. Who
counts a chunk is one byte a chunk in memory shared with the worker: the worker stops at the first chunk
this process has claimed, and this process waits only for a chunk the worker has started. The two meet
where their speeds put them, so neither waits for the other beyond one chunk, whatever else the machine
is doing (if both take the same chunk at the same instant, both count it). The parser uses a worker's
result only when the worker saw exactly the region it is about to read (same chunk, same bytes read, same
line bounds); otherwise — a growing file, an over-long line — it counts the region itself. Results come
back through a pipe (marshal: a few hundred tuples a chunk), so memory stays flat; the worker is a bare
fork (no multiprocessing: its imports alone cost check ~10 % of grep's time on 1 GB) and never outlives
check.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import mmap
import os
import signal
import struct
import sys
from typing import IO, Any

PARALLEL_MIN_BYTES = 64 << 20  # below this the fork and the hand-over cost more than they save


def _worker_init(parent: int) -> None:
    """The worker never outlives check: Ctrl-C is the main process's to handle (it shuts the worker down),
    and the kernel sends SIGTERM to the worker when check ends any other way (PR_SET_PDEATHSIG)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # check was already gone before prctl took effect
        os._exit(0)


_BUFFER: list[bytearray] = []  # the worker's one read buffer (a fresh 8 MB bytes a chunk costs page faults)


def _read_into(fd: int, buf: bytearray, offset: int) -> int:
    """Fill `buf` from `offset` (fewer bytes at the end of the file); how many bytes were read."""
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            break
        got += n
    return got


def chunk_segments(fd: int, index: int, chunk: int) -> tuple[int, int, int, list[Any]] | None:
    """(bytes read, begin, end, segments) for chunk `index`, with the bounds LogParser.feed_bytes uses:
    from after the first newline when the previous chunk did not end with one, to after the last one."""
    from spectui.core.log import segments

    offset = index * chunk
    prev = os.pread(fd, 1, offset - 1) if index else b"\n"
    if not _BUFFER or len(_BUFFER[0]) != chunk:
        _BUFFER[:] = [bytearray(chunk)]
    data = _BUFFER[0]
    got = _read_into(fd, data, offset)
    begin = 0
    if prev != b"\n":
        nl = data.find(b"\n", 0, got)
        if nl < 0:
            return None
        begin = nl + 1
    cut = data.rfind(b"\n", begin, got)
    if cut < 0:
        return None
    return got, begin, cut + 1, segments(data, begin, cut + 1)


_FREE, _WORKER, _MAIN = 0, 1, 2  # who counts a chunk
_HEADER = struct.Struct("<iI")  # a result on the pipe: chunk index, length of the marshalled result
WORKERS: list[int] = []  # pids of the workers started (tests check none is left behind)


def _work(fd: int, n_chunks: int, chunk: int, claims: mmap.mmap, out: int) -> None:
    """The worker: count chunks from the last one down until one is claimed by the main process."""
    for k in range(n_chunks - 1, 0, -1):
        if claims[k] != _FREE:
            return  # the main process got here: every chunk below is its
        claims[k] = _WORKER
        try:
            got = chunk_segments(fd, k, chunk)
        except Exception:  # noqa: BLE001 - the main process counts the chunk itself
            got = None
        payload = marshal.dumps(got)
        view = memoryview(_HEADER.pack(k, len(payload)) + payload)
        while view:
            view = view[os.write(out, view) :]


class ParallelSegments:
    """The parser's `segmenter`: hands over the worker's segments for the chunk being fed, if they fit."""

    def __init__(self, fd: int, size: int, chunk: int, *, steal: bool = True) -> None:
        """`steal=False`: always wait for the worker (it then counts every chunk but the first)."""
        self._steal = steal
        self._n = (size + chunk - 1) // chunk
        self._claims = mmap.mmap(-1, max(1, self._n))  # shared with the forked worker, all _FREE
        self._results: dict[int, Any] = {}
        self._buf = bytearray()
        self._eof = False
        self._data: bytes | bytearray | None = None
        self._index = -1
        self.used = 0  # chunks whose segments came from the worker (for tests and the bench)
        rfd, wfd = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                gc.disable()  # it allocates little; a collection would touch (copy) every page of check's heap
                os.close(rfd)
                _worker_init(parent)
                _work(fd, self._n, chunk, self._claims, wfd)
            except BaseException:  # noqa: BLE001 - nothing of the worker's may reach check's output
                code = 1
            finally:
                os._exit(code)
        os.close(wfd)
        self._rfd = rfd
        self.pid: int | None = pid
        WORKERS.append(pid)

    def start_chunk(self, index: int, data: bytes | bytearray) -> None:
        self._index, self._data = index, data
        if self._steal and 0 < index < self._n and self._claims[index] == _FREE:
            self._claims[index] = _MAIN  # the worker stops here (if it takes it at this instant, both count it)

    def __call__(self, region: bytes | bytearray, begin: int, end: int) -> list[Any] | None:
        k = self._index
        if region is not self._data or not 0 < k < self._n:  # a joined partial line, a cut chunk: count here
            return None
        self._pump(block=False)
        if k not in self._results:
            if self._claims[k] == _MAIN:
                return None  # claimed by this process before the worker got to it: count here
            while k not in self._results and self._pump(block=True):
                pass  # the worker is counting it: wait (at most one chunk's time)
        got = self._results.pop(k, None)
        if got is None or tuple(got[:3]) != (len(region), begin, end):
            return None  # the worker failed or died, or saw other bytes: count here
        self.used += 1
        return got[3]

    def _pump(self, *, block: bool) -> bool:
        """Read what the worker has sent; False when nothing more can come now (or ever: it ended)."""
        if self._eof:
            return False
        os.set_blocking(self._rfd, block)
        try:
            data = os.read(self._rfd, 1 << 20)
        except BlockingIOError:
            return False
        if not data:
            self._eof = True
            return False
        buf = self._buf
        buf += data
        pos = 0
        while len(buf) - pos >= _HEADER.size:
            k, n = _HEADER.unpack_from(buf, pos)
            if len(buf) - pos - _HEADER.size < n:
                break
            pos += _HEADER.size
            self._results[k] = marshal.loads(buf[pos : pos + n])
            pos += n
        del buf[:pos]
        return True

    def close(self) -> None:
        pid, self.pid = self.pid, None
        if pid is None:
            return
        self._claims[:] = bytes([_MAIN]) * len(self._claims)  # a worker still going stops at its next chunk
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # it holds nothing: no need to let it finish a chunk
        os.waitpid(pid, 0)
        os.close(self._rfd)
        self._claims.close()


def parallel_for(stream: IO[bytes], chunk: int, *, steal: bool = True) -> ParallelSegments | None:
    """A ParallelSegments for a big regular file on a machine with a second core (Linux: fork), else None."""
    if sys.platform != "linux" or (os.cpu_count() or 1) < 2:
        return None
    try:
        fd = stream.fileno()
        st = os.fstat(fd)
        if stream.tell() != 0:
            return None
    except (OSError, ValueError, AttributeError):
        return None
    import stat

    if not stat.S_ISREG(st.st_mode) or st.st_size < PARALLEL_MIN_BYTES:
        return None
    try:
        return ParallelSegments(fd, st.st_size, chunk, steal=steal)
    except OSError:
        return None
