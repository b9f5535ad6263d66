"""LogParser: SGLang log text (lines or byte chunks) -> typed records, counted by kind.

Hot path: every line costs a few substring tests before any regex. `feed_bytes` splits chunks at
newlines, holds a partial last line, decodes with errors="replace" and caps absurdly long lines; it
yields exactly what `feed` yields for the same lines. Log text is data: nothing read is evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from spectui.core.log import texts as logtexts
from spectui.core.log.bulk import BulkRun, close_run, feed_region, release_buffer
from spectui.core.log.fields import (
    BATCH_RE,
    MILESTONE_HINTS,
    make_decode,
    make_decode_fragment,
    make_milestone,
    make_prefill,
)
from spectui.core.log.prefix import split_prefix, strip_ansi
from spectui.core.log.records import (
    ErrorEvent,
    LineContext,
    Milestone,
    MilestoneKind,
    OtherLine,
    Record,
    RecordKind,
    WarningEvent,
)
from spectui.core.log.tracebacks import EXC_RE, FRAME_RE, PendingEvent
from spectui.core.log.versionguess import VersionHints, guess_version
from spectui.core.log.versionhints import note_batch, note_milestone, note_prefix

__all__ = ["LogParser", "guess_version", "VersionHints", "MAX_LINE_CHARS"]

MAX_LINE_CHARS = 1_000_000  # a longer line is parsed on its first 1 M characters (still counted once)
MAX_PARTIAL_BYTES = 4 * MAX_LINE_CHARS  # bytes kept of a line not yet ended (UTF-8: ≤ 4 bytes a character)
# prog: "launch_server.py" (≤0.5.9), "sglang serve" (≥0.5.10), "sglang" (0.5.5–0.5.9 console script),
# "python -m sglang.launch_server" (Python 3.14 default prog for -m)
_ARGPARSE_RE = re.compile(r"^(?P<prog>(?:python[\d.]* -m )?[\w.\-]+(?: serve)?): error: (?P<err>.*)$")
_ACCESS_OK = '" 200 OK'
_HELD_OPENER_RE = re.compile(r"^Exception in [\w ]+:?\s*$|(?:xception|rror)[^:]*:\s*$")


_SGR_RE = re.compile(r"\x1b\[[0-9;]*m")


class LogParser:
    """Feed lines (or bytes); get records. One instance per stream (it holds traceback state)."""

    def __init__(self, *, first_line: int = 1, keep_other: bool = False, bulk: bool = False,
                 bulk_tail: int = 310) -> None:
        """`bulk=True` (for whole-file reads): `feed_bytes` counts runs of ordinary decode/prefill/access
        lines without parsing each one (see logbulk); counts, errors, milestones, warnings and metrics
        come out the same, but only the first and last decode lines of a run are yielded (`bulk_tail` per
        DP rank seen: enough for metrics windows and plot series of that many intervals)."""
        self.keep_other = keep_other
        self.bulk = bulk and not keep_other
        self.bulk_tail = bulk_tail
        self.counts: dict[RecordKind, int] = {k: 0 for k in RecordKind}
        self.lines_seen = 0
        self.version_hints = VersionHints()
        self._next = first_line
        self._pending: PendingEvent | None = None
        self._partial = b""
        self._skipping = False  # dropping the middle of an over-long line until its newline
        self._weights_tags: set[str] = set()
        self._shapes: set[tuple[str, str, str, int, str]] = set()
        self._dp_ranks: set[int] = set()  # DP ranks seen in bulk-parsed samples (sizes the parsed tail)
        # bulk: computes logbulk.segments(region, begin, end) elsewhere (another process), or None
        self.segmenter: Callable[[bytes, int, int], list[Any] | None] | None = None
        self.bulk_run: BulkRun | None = None  # lines counted in bulk, not yet added to counts  # ranks that logged their target "Load weight end" this launch

    # -- public API -------------------------------------------------------------------------------

    def feed(self, lines: Iterable[str]) -> list[Record]:
        out: list[Record] = []
        line_fn = self._line
        for text in lines:
            line_fn(text, out)
        return out

    def feed_bytes(self, chunk: bytes) -> list[Record]:
        if not chunk:
            return []
        if self._skipping:  # the rest of an over-long line: only its start is kept (memory stays flat)
            nl = chunk.find(b"\n")
            if nl < 0:
                return []
            chunk = chunk[nl:]
            self._skipping = False
        if self.bulk:
            return self._feed_bytes_bulk(chunk)
        data = self._partial + chunk if self._partial else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._hold(data)
            return []
        self._hold(data[cut + 1 :])
        text = data[:cut].decode("utf-8", errors="replace")
        return self.feed(text.split("\n"))

    def _feed_bytes_bulk(self, chunk: bytes) -> list[Record]:
        # No copy of the (large) chunk: the held partial line is completed on its own first.
        out: list[Record] = []
        start = 0
        if self._partial:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._hold(self._partial + chunk)
                return out
            joined = self._partial + chunk[: nl + 1]
            self._partial = b""
            feed_region(self, joined, 0, len(joined), out, self._tail())
            start = nl + 1
        cut = chunk.rfind(b"\n", start)
        if cut < 0:
            self._hold(chunk[start:])
            return out
        self._hold(chunk[cut + 1 :])
        feed_region(self, chunk, start, cut + 1, out, self._tail())
        return out

    def _hold(self, partial: bytes) -> None:
        if len(partial) > MAX_PARTIAL_BYTES:
            partial = partial[:MAX_PARTIAL_BYTES]
            self._skipping = True
        self._partial = partial

    # -- used by logbulk ----------------------------------------------------------------------------

    def feed_into(self, lines: Iterable[str], out: list[Record]) -> None:
        line_fn = self._line
        for text in lines:
            line_fn(text, out)

    def flush_into(self, out: list[Record]) -> None:
        self._close_pending(out)

    def release(self, buf: bytearray) -> None:
        """`buf`, fed before, is about to be overwritten: copy what the bulk reader still holds of it."""
        release_buffer(self.bulk_run, buf)

    @property
    def pending_event(self) -> PendingEvent | None:
        return self._pending

    def skip_to(self, line: int) -> None:
        """The next line fed is line `line` of the file: a tail that starts mid-file (its backfill) or
        after a gap (a launch's server_args line handed out before the backfill)."""
        self._next = line

    def advance(self, n: int) -> None:
        """`n` lines were counted in bulk."""
        self._next += n
        self.lines_seen += n

    def _tail(self) -> int:
        return self.bulk_tail * max(1, len(self._dp_ranks))

    def parse_sample(self, n: int, raw: str) -> Record | None:
        """Parse one decode/prefill line already counted in bulk (no counting, no state change)."""
        if raw.endswith("\r"):
            raw = raw[:-1]
        if "\x1b" in raw:
            raw = strip_ansi(raw)
        p = split_prefix(raw[:MAX_LINE_CHARS])
        m = BATCH_RE.search(p.msg)
        if m is None:
            return None
        self._note_shape(m)
        if p.ctx.dp_rank is not None and len(self._dp_ranks) < 1024:
            self._dp_ranks.add(p.ctx.dp_rank)
        if m.group("kind") == "Decode":
            return make_decode(n, p.ctx, m)
        return make_prefill(n, p.ctx, m)

    def _note_shape(self, m: re.Match[str]) -> None:
        body = m.group("body")
        # Version clues depend only on the line's shape; look at each new shape once.
        shape = (m.group("kind"), m.group("form")[:2], body[-2:], body.count(", "), body[:12])
        if shape not in self._shapes and len(self._shapes) < 1024:
            self._shapes.add(shape)
            note_batch(self.version_hints, m)

    def flush(self) -> list[Record]:
        out: list[Record] = []
        close_run(self, out, self._tail(), tail_per_rank=self.bulk_tail)
        self._close_pending(out)
        return out

    def finish(self) -> list[Record]:
        out: list[Record] = []
        close_run(self, out, self._tail(), tail_per_rank=self.bulk_tail)
        if self._partial:
            tail, self._partial = self._partial, b""
            self._line(tail.decode("utf-8", errors="replace"), out)
        self._close_pending(out)
        return out

    @property
    def next_line(self) -> int:
        return self._next

    # -- per line ---------------------------------------------------------------------------------

    def _close_pending(self, out: list[Record]) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            out.append(pending.close())
            self.counts[RecordKind.ERROR] += 1

    def _emit(self, rec: Record, kind: RecordKind, out: list[Record]) -> None:
        self.counts[kind] += 1
        out.append(rec)

    def _line(self, raw: str, out: list[Record]) -> None:
        n = self._next
        self._next = n + 1
        self.lines_seen += 1
        if raw.endswith("\r"):
            raw = raw[:-1]
        if len(raw) > MAX_LINE_CHARS:
            raw = raw[:MAX_LINE_CHARS]
        colored = False
        if "\x1b" in raw:
            # Coloured (SGR) means a logger wrote it; any other escape (an OSC hyperlink, a title) is
            # just removed: it must not make a traceback's exception line a record of its own.
            colored = _SGR_RE.search(raw) is not None
            raw = strip_ansi(raw)
        p = split_prefix(raw)
        msg = p.msg
        if p.style:
            note_prefix(self.version_hints, p.style, p.ctx, raw)
        pending = self._pending
        if pending is not None:
            if not p.prefixed and not self._starts_something(msg, colored) and pending.accepts(msg):
                pending.add(n, msg)
                self.counts[RecordKind.OTHER] += 1
                return
            if (p.prefixed and pending.exc_type is None and not pending.held and p.ctx.tags != pending.ctx.tags
                    and " batch" not in msg and not msg.endswith(_ACCESS_OK)):
                self._other_rank_inside(pending, n, p, msg, colored, out)
                return
            self._close_pending(out)
        self._classify(n, p.ctx, msg, p.prefixed, p.level, colored, out, p.indent)

    def _other_rank_inside(self, pending: PendingEvent, n: int, p: Any, msg: str, colored: bool,
                           out: list[Record]) -> None:
        """Another rank's line in the middle of a traceback whose exception line has not come yet (ranks
        write to one stream): an ordinary line is its own record and the traceback goes on after it; one
        that opens an error of its own ends the traceback first. Decode/prefill/access lines always end it
        (the bulk reader counts those without reading them)."""
        mine: list[Record] = []
        self._pending = None
        self._classify(n, p.ctx, msg, True, p.level, colored, mine, p.indent)
        if self._pending is None and not any(isinstance(r, ErrorEvent) for r in mine):
            self._pending = pending
            out.extend(mine)
            return
        opened, self._pending = self._pending, pending
        self._close_pending(out)
        self._pending = opened
        out.extend(mine)

    def _starts_something(self, msg: str, colored: bool) -> bool:
        """An un-prefixed line that is its own record even inside a traceback."""
        if colored or msg.startswith("usage: ") or msg.startswith("Fatal Python error: "):
            return True
        if " batch" in msg and BATCH_RE.match(msg):
            return True
        if ": error: " in msg and _ARGPARSE_RE.match(msg):
            return True
        return logtexts.match_resolution_warning(msg) is not None

    def _classify(
        self, n: int, ctx: LineContext, msg: str, prefixed: bool, level: str | None, colored: bool,
        out: list[Record], indent: int = 0,
    ) -> None:
        hints = self.version_hints
        if " batch" in msg:
            m = BATCH_RE.search(msg)
            if m is not None:
                self._note_shape(m)
                if m.group("kind") == "Decode":
                    self._emit(make_decode(n, ctx, m), RecordKind.DECODE, out)
                else:
                    self._emit(make_prefill(n, ctx, m), RecordKind.PREFILL, out)
                return
        if "accept len: " in msg or "gen throughput (token/s): " in msg:
            sample = make_decode_fragment(n, ctx, msg)  # a decode line pasted without "Decode batch"
            if sample is not None:
                self._emit(sample, RecordKind.DECODE, out)
                return
        if msg.endswith(_ACCESS_OK):
            # a successful HTTP request (uvicorn access line); the bulk reader counts these as other too
            self.counts[RecordKind.OTHER] += 1
            if self.keep_other:
                out.append(OtherLine(n, ctx, msg))
            return
        if "Traceback (most recent call last)" in msg:
            pend = PendingEvent(line=n, ctx=ctx, headline=msg.strip() if not prefixed else msg)
            pend.base_indent = indent if prefixed else len(msg) - len(msg.lstrip())
            pend.headline_exception()
            self._label_from_one_liners(pend, msg)
            self._pending = pend
            return
        if not prefixed:
            if FRAME_RE.match(msg):  # a traceback whose start was cut off
                pend = PendingEvent(line=n, ctx=ctx, headline=msg)
                pend.base_indent = max(0, len(msg) - len(msg.lstrip()) - 2)
                pend.consume(msg)
                self._pending = pend
                return
            first = msg[:1]
            if first.isalpha() and EXC_RE.match(msg):
                pend = PendingEvent(line=n, ctx=ctx, headline=msg)
                pend.consume(msg)
                self._emit(pend.close(), RecordKind.ERROR, out)
                return
            if first in (" ", "\t") and ": " in msg:
                # An exception line indented by the paste ("    RuntimeError: CUDA error: ..."): its
                # message is required, a bare indented word is too weak.
                body = msg.lstrip()
                if len(msg) - len(body) <= 8 and body[:1].isalpha() and EXC_RE.match(body):
                    pend = PendingEvent(line=n, ctx=ctx, headline=body)
                    pend.consume(body)
                    if pend.exc_msg:
                        self._emit(pend.close(), RecordKind.ERROR, out)
                        return
            if first in (" ", "\t"):
                msg = msg.lstrip()  # a paste indented as a whole: its lines are read from their first word
        if ": error: " in msg:
            m = _ARGPARSE_RE.match(msg)
            if m is not None:
                prog = m.group("prog")
                note_milestone(hints, "argparse_prog", prog)
                ev = ErrorEvent(line=n, ctx=ctx, exc_type="ArgparseError", message=m.group("err").strip(),
                                end_line=n, headline=msg, lines=(msg,))
                self._emit(ev, RecordKind.ERROR, out)
                return
        if msg.startswith("usage: "):
            self._weights_tags.clear()
            self._emit(Milestone(n, ctx, MilestoneKind.ARGPARSE_USAGE, msg), RecordKind.MILESTONE, out)
            return
        for hint in MILESTONE_HINTS:
            if hint in msg:
                ms = make_milestone(n, ctx, msg)
                if ms is not None:
                    self._emit(self._milestone(ms), RecordKind.MILESTONE, out)
                    return
                break
        for hint in logtexts.ONE_LINE_ERROR_HINTS:
            if hint in msg:
                for pattern, label in logtexts.ONE_LINE_ERRORS:
                    if pattern.search(msg):
                        if label == "FatalPythonError":
                            # faulthandler prints the threads' stacks under it: collect them as frames
                            pend = PendingEvent(line=n, ctx=ctx, headline=msg, label=label, label_msg=msg.strip())
                            pend.recent_first = True
                            self._pending = pend
                            return
                        ev = ErrorEvent(line=n, ctx=ctx, exc_type=label, message=msg.strip(), end_line=n,
                                        headline=msg, lines=(msg,))
                        self._emit(ev, RecordKind.ERROR, out)
                        return
                break
        if (msg.endswith(":") or msg.startswith("Exception in ")) and _HELD_OPENER_RE.search(msg.rstrip()):
            self._pending = PendingEvent(line=n, ctx=ctx, headline=msg, label="Error", held=True)
            return
        category = logtexts.warning_category(self.version_hints, msg, prefixed, level, colored)
        if category:
            self._emit(WarningEvent(n, ctx, msg, category), RecordKind.WARNING, out)
            return
        if level in ("ERROR", "CRITICAL"):
            ev = ErrorEvent(line=n, ctx=ctx, exc_type="LoggedError", message=msg.strip(), end_line=n,
                            headline=msg, lines=(msg,), fatal=False)
            self._emit(ev, RecordKind.ERROR, out)
            return
        self.counts[RecordKind.OTHER] += 1
        if self.keep_other:
            out.append(OtherLine(n, ctx, msg))

    def _label_from_one_liners(self, ev: PendingEvent, msg: str) -> None:
        for pattern, label in logtexts.ONE_LINE_ERRORS:
            if pattern.search(msg):
                ev.label, ev.label_msg = label, msg.strip()
                return

    def _milestone(self, ms: Milestone) -> Milestone:
        note_milestone(self.version_hints, ms.kind.value, ms.text)
        if ms.kind in (MilestoneKind.SERVER_ARGS, MilestoneKind.FIRED_UP):
            self._weights_tags.clear()  # the next "Load weight end" on a rank is a new launch's target
        elif ms.kind is MilestoneKind.WEIGHTS_LOADED:
            # With spec each rank prints "Load weight end" twice: target first, then the draft.
            key = ms.ctx.tags
            if key in self._weights_tags:
                return Milestone(ms.line, ms.ctx, MilestoneKind.DRAFT_WEIGHTS_LOADED, ms.text, ms.detail)
            self._weights_tags.add(key)
        return ms
