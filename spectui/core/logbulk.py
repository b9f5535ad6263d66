"""Bulk reading for `spectui check`: count long runs of ordinary lines in C, parse only what matters.

A big SGLang log is mostly three kinds of line: `] Decode batch`, `] Prefill batch` and uvicorn access
lines ending `" 200 OK`. For a block of complete lines, `bytes.count` of those markers and of newlines
tells whether every line is one of them (each such line holds exactly one marker). Such a block is
counted without a Python loop; any other block is split until small, then read line by line by the
ordinary parser. Of each run of counted lines the first decode line and the last `tail` ones are parsed
in full, so launch starts, windows and DP sums come out as with line-by-line parsing; the last parsed
sample carries how many lines the run stood for (`skipped_decode`, `skipped_prefill`).

Known limit: a line holding two markers (two log lines glued by concurrent writers) in the same small
block as a line holding none would make that block look ordinary.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from spectui.core.records import DecodeSample, PrefillSample, Record, RecordKind

if TYPE_CHECKING:
    from spectui.core.logparse import LogParser

DECODE_MARK = b"] Decode batch"
PREFILL_MARK = b"] Prefill batch"
ACCESS_MARK = b'" 200 OK\n'
BLOCK = 1 << 20  # first verification size (fits in cache: the 2-4 count passes re-read it from there)
LEAF = 1 << 13  # below this, read line by line
TAIL_BYTES = 1 << 20  # kept from a run's end to parse its last decode lines when it closes

Segment = tuple[bool, int, int, int, int, int]  # ordinary, start, stop, lines, decode, prefill


class BulkRun:
    """A stretch of counted lines; it may span several feed_bytes calls."""

    __slots__ = ("first_line", "decode", "prefill", "other", "lines", "first_done", "parsed", "tail")

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.decode = self.prefill = self.other = self.lines = 0
        self.first_done = False
        self.parsed = 0  # decode samples already yielded for this run (the first one)
        self.tail = b""  # the run's last bytes, whole lines


def _segments(region: bytes, start: int, end: int, size: int, out: list[Segment]) -> None:
    pos = start
    while pos < end:
        stop = min(pos + size, end)
        if stop < end:
            nl = region.find(b"\n", stop - 1, end)
            stop = end if nl < 0 else nl + 1
        n = region.count(b"\n", pos, stop)
        d = region.count(DECODE_MARK, pos, stop)
        p = a = 0
        if d != n:
            p = region.count(PREFILL_MARK, pos, stop)
            if d + p != n:
                a = region.count(ACCESS_MARK, pos, stop)
        if d + p + a == n:
            out.append((True, pos, stop, n, d, p))
        elif size <= LEAF or stop - pos <= LEAF or n <= 1:
            out.append((False, pos, stop, n, 0, 0))
        else:
            _segments(region, pos, stop, max(LEAF, size // 8), out)
        pos = stop


def feed_region(parser: LogParser, region: bytes, end: int, out: list[Record], tail: int) -> None:
    """Read region[:end], which holds complete lines only (region[end - 1] is a newline)."""
    segments: list[Segment] = []
    _segments(region, 0, end, BLOCK, segments)
    run_start: int | None = None  # where the open run starts in this region
    for ordinary, start, stop, n, d, p in segments:
        if not ordinary:
            if parser.bulk_run is not None:
                close_run(parser, out, tail, region, run_start if run_start is not None else start, start)
                run_start = None
            text = region[start : stop - 1].decode("utf-8", errors="replace")
            parser.feed_into(text.split("\n"), out)
            continue
        run = parser.bulk_run
        if run is None:
            parser.flush_into(out)  # ordinary lines are prefixed: the first ends a pending traceback
            run = parser.bulk_run = BulkRun(parser.next_line)
        if run_start is None:
            run_start = start
        if d and not run.first_done:
            first = _first_decode(parser, region, start, stop, run.first_line + run.lines)
            if first is not None:
                out.append(first)
                run.parsed = 1
            run.first_done = True
        run.lines += n
        run.decode += d
        run.prefill += p
        run.other += n - d - p
        parser.advance(n)
    run = parser.bulk_run
    if run is not None and run_start is not None:
        run.tail = _keep_tail(run.tail, region, run_start, end)


def _keep_tail(old: bytes, region: bytes, start: int, end: int) -> bytes:
    if end - start >= TAIL_BYTES:
        cut = region.find(b"\n", end - TAIL_BYTES, end) + 1
        return region[cut:end]
    joined = old + region[start:end]
    if len(joined) <= TAIL_BYTES:
        return joined
    cut = joined.find(b"\n", len(joined) - TAIL_BYTES) + 1
    return joined[cut:]


def close_run(parser: LogParser, out: list[Record], tail: int, region: bytes = b"", start: int = 0,
              end: int = 0) -> None:
    """End the open run: add its counts and yield its last decode lines (from region[start:end] and the
    bytes kept from earlier calls)."""
    run = parser.bulk_run
    if run is None:
        return
    parser.bulk_run = None
    if end > start:
        run.tail = _keep_tail(run.tail, region, start, end)
    counts = parser.counts
    counts[RecordKind.DECODE] += run.decode
    counts[RecordKind.PREFILL] += run.prefill
    counts[RecordKind.OTHER] += run.other
    picked: list[DecodeSample | PrefillSample] = []
    last_line = run.first_line + run.lines - 1
    if run.decode > run.parsed:
        picked.extend(_tail_samples(parser, run.tail, last_line, tail, DECODE_MARK, run.decode - run.parsed))
    if not picked and run.prefill:
        picked.extend(_tail_samples(parser, run.tail, last_line, 1, PREFILL_MARK, 1))
    parsed_decode = run.parsed + sum(1 for r in picked if type(r) is DecodeSample)
    parsed_prefill = len(picked) - sum(1 for r in picked if type(r) is DecodeSample)
    skipped_decode = run.decode - parsed_decode
    skipped_prefill = run.prefill - parsed_prefill
    if picked:
        picked[-1] = replace(picked[-1], skipped_decode=skipped_decode, skipped_prefill=skipped_prefill)
        out.extend(picked)


def _first_decode(parser: LogParser, region: bytes, start: int, stop: int, first_line: int) -> Record | None:
    at = region.find(DECODE_MARK, start, stop)
    if at < 0:
        return None
    ls = max(region.rfind(b"\n", start, at) + 1, start)
    le = region.find(b"\n", at, stop)
    n = first_line + region.count(b"\n", start, ls)
    rec = parser.parse_sample(n, region[ls:le].decode("utf-8", errors="replace"))
    return rec if isinstance(rec, DecodeSample) else None


def _tail_samples(parser: LogParser, data: bytes, last_line: int, want: int, mark: bytes,
                  limit: int) -> list[DecodeSample | PrefillSample]:
    """Parse the last `want` (at most `limit`) lines holding `mark` in `data` (whole lines)."""
    want = min(want, limit)
    found: list[tuple[int, int, int]] = []  # (start, end, line number), newest first
    n = last_line
    end = len(data) - 1
    while end > 0 and len(found) < want:
        ls = data.rfind(b"\n", 0, end) + 1
        if data.find(mark, ls, end) >= 0:
            found.append((ls, end, n))
        n -= 1
        end = ls - 1
    samples: list[DecodeSample | PrefillSample] = []
    for ls, le, line_no in reversed(found):
        rec = parser.parse_sample(line_no, data[ls:le].decode("utf-8", errors="replace"))
        if isinstance(rec, DecodeSample | PrefillSample):
            samples.append(rec)
    return samples
