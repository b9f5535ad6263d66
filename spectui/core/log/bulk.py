"""Bulk reading for `spectui check`: count long runs of ordinary lines in C, parse only what matters.

A big SGLang log is mostly three kinds of line: `] Decode batch`, `] Prefill batch` and uvicorn access
lines ending `" 200 OK`. For a block of complete lines, `bytes.count` of those markers and of newlines
tells whether every line is one of them (each such line holds exactly one marker). Such a block is
counted without a Python loop; any other block is split until small, then read line by line by the
ordinary parser. A run of counted lines goes on across such line-by-line pieces unless one of them may
start a new launch; when the run ends, its first decode line and its last `tail` ones are parsed in full
(so windows, DP sums and launch starts come out as with line-by-line parsing) and merged in line order
with the records read in between. The last parsed sample carries how many lines the run stood for
(`skipped_decode`, `skipped_prefill`).

Known limits: a line holding two markers (two log lines glued by concurrent writers) in the same small
block as a line holding none would make that block look ordinary. DP ranks are summed per interval by
grouping consecutive lines (metrics.py); the parsed tail starts mid-interval, so its first few groups may
be cut differently than line by line — they fall before the windows and plot series when ranks print in
varying order, as they do in real logs (a fixed rank order never re-aligns).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from spectui.core.log.records import (
    DecodeSample,
    ErrorEvent,
    Milestone,
    MilestoneKind,
    PrefillSample,
    Record,
    RecordKind,
    WarningEvent,
)


class LogParser(Protocol):
    """What the bulk path needs of core.log.parse.LogParser (named here so bulk does not import parse)."""

    bulk_run: BulkRun | None
    bulk_tail: int
    counts: dict[RecordKind, int]
    segmenter: Callable[[bytes, int, int], list[Any] | None] | None

    @property
    def pending_event(self) -> Any: ...
    @property
    def next_line(self) -> int: ...
    def feed_into(self, lines: Iterable[str], out: list[Record]) -> None: ...
    def flush_into(self, out: list[Record]) -> None: ...
    def advance(self, n: int) -> None: ...
    def parse_sample(self, n: int, raw: str) -> Record | None: ...

DECODE_MARK = b"] Decode batch"
PREFILL_MARK = b"] Prefill batch"
ACCESS_MARK = b'" 200 OK\n'
BLOCK = 128 << 10  # first verification size: small enough that the 2-4 count passes re-read it from cache
LEAF = 1 << 9  # below this, read line by line (a few lines: each costs ~30 µs parsed, a recount ~nothing)
TAIL_BYTES = 2 << 20  # kept from a run's end to parse its last decode lines when it closes
MAX_HELD = 4096  # records read inside a run and held until it closes (then the run is closed early)
_LAUNCH_MILESTONES = {MilestoneKind.SERVER_ARGS, MilestoneKind.ARGPARSE_USAGE, MilestoneKind.WEIGHTS_BEGIN,
                      MilestoneKind.DIST_INIT}

Segment = tuple[bool, int, int, int, int, int]  # ordinary, start, stop, lines, decode, prefill
Marks = tuple[bytes, bytes, bytes]  # decode, prefill, access
BASE_MARKS: Marks = (DECODE_MARK, PREFILL_MARK, ACCESS_MARK)
# The same marks made longer with the text that follows (precedes) them in SGLang's usual lines: bytes.count
# (CPython's two-way search) skips much further per step with these, ~4x less time a pass than with BASE.
# Each holds its BASE mark, so they only ever find fewer lines: a block they miss is recounted with BASE.
FAST_MARKS: Marks = (DECODE_MARK + b", #running-req: ", PREFILL_MARK + b", ", b' HTTP/1.1' + ACCESS_MARK)
MISFIT = 2  # first-size blocks ordinary by BASE only before a region is read with BASE alone


class BulkRun:
    """A stretch of counted lines (with line-by-line pieces inside); it may span several feed_bytes calls."""

    __slots__ = ("decode", "prefill", "other", "last_line", "first_done", "first", "tail", "held", "read")

    def __init__(self) -> None:
        self.decode = self.prefill = self.other = 0
        self.last_line = 0
        self.first_done = False
        self.first: DecodeSample | None = None  # the run's first decode line, parsed
        self.tail: list[tuple[bytes, int, int]] = []  # (buffer, start, end) pieces of the run's last bytes
        self.held: list[Record] = []  # records of the line-by-line pieces inside the run
        self.read: list[tuple[int, int]] = []  # line ranges read line by line (not to parse twice)


def _counts(region: bytes, pos: int, stop: int, n: int, marks: Marks) -> tuple[int, int, int]:
    """(decode, prefill, access) lines of region[pos:stop] by `marks`, stopping once they add up to `n`."""
    decode, prefill, access = marks
    d = region.count(decode, pos, stop)
    p = a = 0
    if d != n:
        p = region.count(prefill, pos, stop)
        if d + p != n:
            a = region.count(access, pos, stop)
    return d, p, a


def _segments(region: bytes, start: int, end: int, size: int, out: list[Segment], marks: Marks,
              top: list[int] | None) -> None:
    """Split region[start:end] into ordinary and line-by-line segments. A block is ordinary when every line
    holds one of `marks` (FAST_MARKS: each holds the corresponding BASE mark, so a line counted by them is
    counted the same by BASE) or, failing that, one of BASE_MARKS: a block made ordinary by BASE is never
    split or read line by line, whatever `marks` are. The BASE recount is done on first-size blocks
    (`top`: how many were ordinary only by BASE; after MISFIT of them this region is read with BASE alone)
    and on leaves; a smaller block that fails by `marks` is split, its leaves recounted by BASE."""
    pos = start
    while pos < end:
        stop = min(pos + size, end)
        if stop < end:
            nl = region.find(b"\n", stop - 1, end)
            stop = end if nl < 0 else nl + 1
        n = region.count(b"\n", pos, stop)
        d, p, a = _counts(region, pos, stop, n, marks)
        if d + p + a != n and marks is not BASE_MARKS:
            leaf = size <= LEAF or stop - pos <= LEAF or n <= 1
            if top is not None or leaf:
                d, p, a = _counts(region, pos, stop, n, BASE_MARKS)
                if top is not None and d + p + a == n:
                    top[0] += 1
                    if top[0] >= MISFIT:
                        marks = BASE_MARKS
        if d + p + a == n:
            out.append((True, pos, stop, n, d, p))
        elif size <= LEAF or stop - pos <= LEAF or n <= 1:
            out.append((False, pos, stop, n, 0, 0))
        else:
            _segments(region, pos, stop, max(LEAF, size // 8), out, marks, None)
        pos = stop


def segments(region: bytes, begin: int, end: int) -> list[Segment]:
    """How feed_region splits region[begin:end] (complete lines): pure, so another process may compute it."""
    out: list[Segment] = []
    _segments(region, begin, end, BLOCK, out, FAST_MARKS, [0])
    return out


def _may_start_launch(rec: Record) -> bool:
    if isinstance(rec, Milestone):
        return rec.kind in _LAUNCH_MILESTONES
    if isinstance(rec, WarningEvent):
        return rec.category == "resolution"
    if isinstance(rec, ErrorEvent):
        return rec.exc_type == "ArgparseError"
    return False


def feed_region(parser: LogParser, region: bytes, begin: int, end: int, out: list[Record], tail: int) -> None:
    """Read region[begin:end], which holds complete lines only (region[end - 1] is a newline)."""
    given = parser.segmenter(region, begin, end) if parser.segmenter is not None else None
    segs = given if given is not None else segments(region, begin, end)
    run_start: int | None = None  # where the open run's bytes start in this region
    for ordinary, start, stop, n, d, p in segs:
        run = parser.bulk_run
        if not ordinary:
            first = parser.next_line
            text = region[start : stop - 1].decode("utf-8", errors="replace")
            piece: list[Record] = []
            parser.feed_into(text.split("\n"), piece)
            if run is not None:
                inside = (parser.pending_event is None and len(run.held) + len(piece) <= MAX_HELD
                          and len(run.read) < MAX_HELD and not any(_may_start_launch(r) for r in piece))
                if inside:  # the run goes on across these lines
                    if run_start is None:
                        run_start = start
                    run.held.extend(piece)
                    run.read.append((first, parser.next_line - 1))
                    run.last_line = parser.next_line - 1
                    continue
                # The run ends before these lines: close it with its bytes up to here, then emit them.
                close_run(parser, out, tail, region, run_start if run_start is not None else start, start,
                          last_line=first - 1, tail_per_rank=parser.bulk_tail)
                run_start = None
            out.extend(piece)
            continue
        if run is None:
            parser.flush_into(out)  # ordinary lines are prefixed: the first ends a pending traceback
            run = parser.bulk_run = BulkRun()
        if run_start is None:
            run_start = start
        if d and not run.first_done:
            run.first = _first_decode(parser, region, start, stop, parser.next_line)
            run.first_done = True
        run.decode += d
        run.prefill += p
        run.other += n - d - p
        parser.advance(n)
        run.last_line = parser.next_line - 1
    run = parser.bulk_run
    if run is not None and run_start is not None:
        _keep_tail(run, region, run_start, end)


def _keep_tail(run: BulkRun, region: bytes, start: int, end: int) -> None:
    """Remember region[start:end] as the run's newest bytes (by reference: no copy), forgetting pieces
    that are more than TAIL_BYTES from the end."""
    if end <= start:
        return
    parts = run.tail
    parts.append((region, start, end))
    size = 0
    for i in range(len(parts) - 1, -1, -1):
        size += parts[i][2] - parts[i][1]
        if size >= TAIL_BYTES:
            del parts[:i]
            break


def release_buffer(run: BulkRun | None, buf: bytearray) -> None:
    """`buf` is about to be overwritten (check reads into the same buffers in turn): the open run's kept
    bytes that are in it are copied."""
    if run is not None and any(part[0] is buf for part in run.tail):
        run.tail = [(bytes(b[s:e]), 0, e - s) if b is buf else (b, s, e) for b, s, e in run.tail]


def _tail_bytes(run: BulkRun) -> bytes:
    data = b"".join(buf[a:b] for buf, a, b in run.tail)
    if len(data) > TAIL_BYTES:
        data = data[data.find(b"\n", len(data) - TAIL_BYTES) + 1 :]
    return data


def close_run(parser: LogParser, out: list[Record], tail: int, region: bytes = b"", start: int = 0, end: int = 0,
              last_line: int | None = None, tail_per_rank: int = 0) -> None:
    """End the open run: add its counts, parse its last decode lines (from region[start:end] and the bytes
    kept from earlier calls) and emit them merged in line order with the records held inside the run."""
    run = parser.bulk_run
    if run is None:
        return
    parser.bulk_run = None
    _keep_tail(run, region, start, end)
    data = _tail_bytes(run)
    counts = parser.counts
    counts[RecordKind.DECODE] += run.decode
    counts[RecordKind.PREFILL] += run.prefill
    counts[RecordKind.OTHER] += run.other
    last = run.last_line if last_line is None else last_line
    picked: list[DecodeSample | PrefillSample] = [run.first] if run.first is not None else []
    if run.decode > len(picked):
        limit = run.decode - len(picked)
        got = _tail_samples(parser, run, data, last, tail, DECODE_MARK, limit)
        ranks = len({s.ctx.dp_rank for s in got if s.ctx.dp_rank is not None})
        if ranks * tail_per_rank > tail:  # more DP ranks than known: each needs its own share of the tail
            got = _tail_samples(parser, run, data, last, ranks * tail_per_rank, DECODE_MARK, limit)
        picked += got
    if not picked and run.prefill:
        picked = _tail_samples(parser, run, data, last, 1, PREFILL_MARK, 1)
    if picked:
        n_decode = sum(1 for r in picked if type(r) is DecodeSample)
        picked[-1] = replace(picked[-1], skipped_decode=run.decode - n_decode,
                             skipped_prefill=run.prefill - (len(picked) - n_decode))
    out.extend(heapq.merge(run.held, picked, key=lambda r: r.line))


def _first_decode(parser: LogParser, region: bytes, start: int, stop: int, first_line: int) -> DecodeSample | None:
    at = region.find(DECODE_MARK, start, stop)
    if at < 0:
        return None
    ls = max(region.rfind(b"\n", start, at) + 1, start)
    le = region.find(b"\n", at, stop)
    n = first_line + region.count(b"\n", start, ls)
    rec = parser.parse_sample(n, region[ls:le].decode("utf-8", errors="replace"))
    return rec if isinstance(rec, DecodeSample) else None


def _tail_samples(parser: LogParser, run: BulkRun, data: bytes, last_line: int, want: int, mark: bytes,
                  limit: int) -> list[DecodeSample | PrefillSample]:
    """Parse the last `want` (at most `limit`) counted lines holding `mark` in `data`, the run's last bytes."""
    want = min(want, limit)
    read = run.read
    idx = len(read) - 1  # ranges are in ascending order; walk them backwards with the lines
    found: list[tuple[int, int, int]] = []  # (start, end, line number), newest first
    n = last_line
    end = len(data) - 1
    while end > 0 and len(found) < want:
        ls = data.rfind(b"\n", 0, end) + 1
        while idx >= 0 and read[idx][0] > n:
            idx -= 1
        counted = idx < 0 or n > read[idx][1]  # not a line read line by line
        if counted and data.find(mark, ls, end) >= 0:
            found.append((ls, end, n))
        n -= 1
        end = ls - 1
    samples: list[DecodeSample | PrefillSample] = []
    for ls, le, line_no in reversed(found):
        rec = parser.parse_sample(line_no, data[ls:le].decode("utf-8", errors="replace"))
        if isinstance(rec, DecodeSample | PrefillSample):
            samples.append(rec)
    return samples
