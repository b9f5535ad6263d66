"""A second process for `spectui check` on a big regular file: it counts chunks from the end of the file.

Nearly all of check's time on a big log is the bulk reader's counting passes (logbulk.segments: newlines,
decode, prefill and access markers, a C pass each). They are a pure function of a chunk's bytes, so one
forked worker computes them (reading the chunks itself with pread, at the same offsets), last chunk
first, while this process reads and parses from the start and counts each chunk the worker has not
started yet (cancelling it there). The two meet where their speeds put them, so neither waits for the
other beyond one chunk, whatever else the machine is doing. The parser uses a worker's result only when
the worker saw exactly the region it is about to read (same chunk, same bytes read, same line bounds);
otherwise — a growing file, an over-long line — it counts the region itself. Results are a few hundred
tuples per chunk, so memory stays flat; the worker is shut down (never left behind) when check ends.
"""

from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import Future, ProcessPoolExecutor
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


def _read_at(fd: int, length: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        got = os.pread(fd, length, offset)
        if not got:
            break
        parts.append(got)
        length -= len(got)
        offset += len(got)
    return b"".join(parts)


def chunk_segments(fd: int, index: int, chunk: int) -> tuple[int, int, int, list[Any]] | None:
    """(bytes read, begin, end, segments) for chunk `index`, with the bounds LogParser.feed_bytes uses:
    from after the first newline when the previous chunk did not end with one, to after the last one."""
    from spectui.core.log import segments

    offset = index * chunk
    prev = _read_at(fd, 1, offset - 1) if index else b"\n"
    data = _read_at(fd, chunk, offset)
    begin = 0
    if prev != b"\n":
        nl = data.find(b"\n")
        if nl < 0:
            return None
        begin = nl + 1
    cut = data.rfind(b"\n", begin)
    if cut < 0:
        return None
    return len(data), begin, cut + 1, segments(data, begin, cut + 1)


class ParallelSegments:
    """The parser's `segmenter`: hands over the worker's segments for the chunk being fed, if they fit."""

    def __init__(self, fd: int, size: int, chunk: int, *, steal: bool = True) -> None:
        """`steal=False`: always wait for the worker (it then counts every chunk but the first)."""
        import multiprocessing

        self._steal = steal

        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                         initializer=_worker_init, initargs=(os.getpid(),))
        n_chunks = (size + chunk - 1) // chunk
        # Submitted last chunk first: the worker takes them in that order (chunk 0 is always counted here).
        self._futures: dict[int, Future[Any]] = {
            k: self._pool.submit(chunk_segments, fd, k, chunk) for k in range(n_chunks - 1, 0, -1)
        }
        self._data: bytes | None = None
        self._index = -1
        self.used = 0  # chunks whose segments came from the worker (for tests and the bench)

    def start_chunk(self, index: int, data: bytes) -> None:
        self._index, self._data = index, data

    def __call__(self, region: bytes, begin: int, end: int) -> list[Any] | None:
        if region is not self._data:  # a joined partial line, or a chunk cut by the parser: count here
            return None
        future = self._futures.pop(self._index, None)
        if future is None or (self._steal and not future.done() and future.cancel()):  # not started: count here
            return None
        try:
            got = future.result()
        except Exception:  # noqa: BLE001 - the worker failed or died: this process counts the chunk
            return None
        if got is None or got[:3] != (len(region), begin, end):
            return None
        self.used += 1
        return got[3]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


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
