"""The log member: which bytes of the server log go into a bundle, and their timestamps for replay.

`cut_log(data, budget)` keeps the current launch (from its `server_args=` line, or `start_offset`)
within a byte budget: when the launch is longer, the tail is kept, and so are the `server_args=` line and
every traceback before the tail; each run of omitted lines becomes one marker line
`[spectui: cut lines A-B of the log (N bytes, why)]`. The returned info says what was cut and maps
bundle log lines back to the original line numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

DEFAULT_LOG_BUDGET = 8 * 1024 * 1024
CONTEXT_BEFORE_LAUNCH = 20  # lines before the `server_args=` line that belong to the same start-up
MAX_TRACEBACK_LINES = 100_000  # a span longer than this is not a traceback any more
KEEP_TRACEBACK_LINES = 2000  # of a longer traceback in a cut log: its first and last 1000 lines
CUT_MARK_RE = re.compile(r"^\[spectui: cut lines (\d+)-(\d+) of the log \((\d+) bytes, ([^)]*)\)\]$")

_TB_START = "Traceback (most recent call last)"
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_PREFIXED_RE = re.compile(r"^(?:\[\d{4}-\d\d-\d\d[ T]\d\d:|\[\d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[ T]\d\d:\d\d)")
_DATETIME_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
_TIME_RE = re.compile(r"^\s*\[(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?[ \]]")


def is_traceback_start(line: str) -> bool:
    return _TB_START in line


def traceback_spans(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based inclusive indices of each Python traceback, chained ones as one span.
    A traceback runs over indented lines to its `Type: message` line; a prefixed log line ends it."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    while i < n:
        if not is_traceback_start(lines[i]):
            i += 1
            continue
        start, j = i, i + 1
        end = i
        while j < n and j - start < MAX_TRACEBACK_LINES:
            line = lines[j]
            if not line.strip():
                k = j + 1
                while k < n and not lines[k].strip():
                    k += 1
                after_chain = lines[end].startswith(_CHAIN)
                if k < n and (lines[k].startswith(_CHAIN) or (after_chain and is_traceback_start(lines[k]))):
                    j = k
                    continue
                break
            if _PREFIXED_RE.match(line):
                break
            if line[:1].isspace() or line.startswith(_CHAIN) or is_traceback_start(line):
                end = j
                j += 1
                continue
            end = j  # the exception line `Type: message`
            j += 1
            if j < n and lines[j][:1].isspace() and not _PREFIXED_RE.match(lines[j]):
                continue  # a multi-line message or a chained traceback's indented part
            k = j
            while k < n and not lines[k].strip():
                k += 1
            if k < n and lines[k].startswith(_CHAIN):
                j = k
                continue
            break
        spans.append((start, end))
        i = max(end + 1, i + 1)
    return spans


def _line_ends(lines: Sequence[bytes]) -> list[int]:
    out, pos = [], 0
    for raw in lines:
        pos += len(raw)
        out.append(pos)
    return out


def cut_log(
    data: bytes, budget: int = DEFAULT_LOG_BUDGET, *, start_offset: int | None = None
) -> tuple[bytes, dict[str, Any]]:
    """The log member's bytes and its manifest `log` info (see docs/BUNDLE.md)."""
    raw = data.splitlines(keepends=True)
    text = [r.decode("utf-8", "replace").rstrip("\r\n") for r in raw]
    ends = _line_ends(raw)
    first = 0
    start_kind = "file"
    if start_offset is not None and 0 < start_offset < len(data):
        first = next((i for i, e in enumerate(ends) if e > start_offset), len(raw))
        start_kind = "offset"
    else:
        launches = [i for i, t in enumerate(text) if "server_args=" in t]
        if launches:
            prev = launches[-2] + 1 if len(launches) > 1 else 0
            first = max(prev, launches[-1] - CONTEXT_BEFORE_LAUNCH)
            start_kind = "launch" if first or len(launches) > 1 else "file"
    keep = [False] * len(raw)
    why: dict[int, str] = {}
    region = range(first, len(raw))
    region_bytes = len(data) - (ends[first - 1] if first else 0)
    protected: list[dict[str, Any]] = []
    if region_bytes <= budget:
        for i in region:
            keep[i] = True
    else:
        spans = [(i, i, "server_args") for i in region if "server_args=" in text[i]]
        spans += [(a + first, b + first, "traceback") for a, b in traceback_spans(text[first:])]
        spans.sort()
        kept_bytes = 0
        for a, b, kind in _shorten(spans):
            size = sum(len(raw[i]) for i in range(a, b + 1))
            if kept_bytes + size > 4 * budget:
                continue
            kept_bytes += size
            protected.append({"from_line": a + 1, "to_line": b + 1, "why": kind})
            for i in range(a, b + 1):
                keep[i] = True
                why[i] = kind
        tail_budget = max(budget - kept_bytes, budget // 4)
        used = 0
        for i in reversed(region):
            used += len(raw[i])
            if used > tail_budget:
                break
            keep[i] = True
    _fill_small_gaps(keep, raw, first)
    out: list[bytes] = []
    cuts: list[dict[str, Any]] = []
    line_map: list[list[int]] = []  # [bundle_line, original_line, count]
    i = 0
    while i < len(raw):
        if keep[i]:
            j = i
            while j < len(raw) and keep[j]:
                j += 1
            line_map.append([len(out) + 1, i + 1, j - i])
            out.extend(raw[i:j])
            if not out[-1].endswith(b"\n") and j < len(raw):
                out[-1] += b"\n"
            i = j
            continue
        j, limit = i, (first if i < first else len(raw))
        while j < limit and not keep[j]:
            j += 1
        size = (ends[j - 1]) - (ends[i - 1] if i else 0)
        reason = "before this launch" if i < first else "over the byte budget"
        cuts.append({"from_line": i + 1, "to_line": j, "bytes": size, "why": reason})
        out.append(f"[spectui: cut lines {i + 1}-{j} of the log ({size} bytes, {reason})]\n".encode())
        i = j
    body = b"".join(out)
    info = {
        "original_bytes": len(data),
        "original_lines": len(raw),
        "bytes": len(body),
        "budget": budget,
        "start": start_kind,
        "start_line": first + 1 if raw else 1,
        "cut": bool(cuts),
        "cuts": cuts,
        "protected": protected,
        "line_map": line_map,
        "timestamps": any(line_time(t) is not None for t in text[first : first + 2000]),
    }
    return body, info


def _shorten(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """A traceback longer than KEEP_TRACEBACK_LINES is kept as its head and its tail (the exception)."""
    out = []
    half = KEEP_TRACEBACK_LINES // 2
    for a, b, kind in spans:
        if b - a + 1 > KEEP_TRACEBACK_LINES:
            out += [(a, a + half - 1, kind), (b - half + 1, b, kind)]
        else:
            out.append((a, b, kind))
    return out


def _fill_small_gaps(keep: list[bool], raw: Sequence[bytes], first: int, small: int = 80) -> None:
    """Lines cheaper than their cut marker (a blank line between two tracebacks) are kept."""
    i = first
    while i < len(raw):
        if keep[i]:
            i += 1
            continue
        j = i
        while j < len(raw) and not keep[j]:
            j += 1
        if sum(len(r) for r in raw[i:j]) <= small:
            keep[i:j] = [True] * (j - i)
        i = j


def line_time(line: str) -> float | None:
    """Seconds of a log line's timestamp (epoch seconds for a date, seconds of the day for `[HH:MM:SS`)."""
    head = line[:160]
    m = _DATETIME_RE.search(head)
    if m:
        y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        try:
            return datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp() + frac
        except ValueError:
            return None
    m = _TIME_RE.match(head)
    if m:
        h, mi, s = (int(x) for x in m.groups()[:3])
        return h * 3600 + mi * 60 + s + (float("0." + m.group(4)) if m.group(4) else 0.0)
    return None


def timed_lines(lines: Sequence[str], *, spacing: float = 0.05) -> Iterator[tuple[float, str]]:
    """(t_offset, line) from the first timestamped line: un-timestamped lines (tracebacks, markers)
    share the previous line's time, time never goes back; with no timestamps at all, even `spacing`."""
    times = [line_time(line) for line in lines]
    if not any(t is not None for t in times):
        for i, line in enumerate(lines):
            yield i * spacing, line
        return
    base = next(t for t in times if t is not None)
    last, day = 0.0, 0.0
    for line, t in zip(lines, times, strict=True):
        if t is not None:
            off = t - base + day
            if off < last - 43200:  # a time-of-day stamp past midnight
                day += 86400
                off += 86400
            last = max(last, off)
        yield last, line
