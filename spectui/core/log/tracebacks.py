"""Group a Python traceback (or argparse / one-line failure) spread over several log lines into one ErrorEvent.

SGLang logs `Scheduler hit an exception: Traceback ...` on one prefixed line; the traceback continues on
lines with no prefix. The exception type and message come from the final `Type: message` line
(a bare `AssertionError` has an empty message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spectui.core.log.records import ErrorEvent, Frame, LineContext

# Python's traceback: 'File "x.py", line 3, in f'; faulthandler's dump (after "Fatal Python error: "):
# 'File "x.py", line 3 in f' (no comma, most recent call first).
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<lineno>\d+),? in (?P<func>.*)$')
# "Thread 0x7f... (most recent call first):", "Current thread 0x7f... [python3] (...)" (3.13 names threads),
# "Stack (most recent call first):" (one thread only)
_THREAD_RE = re.compile(
    r"^\s*(?P<current>Current thread|Thread|Stack)(?: 0x[0-9a-fA-F]+)?(?: \[[^\]]*\])? \(most recent call first\):")
EXC_RE = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)"
    r"|Exception|KeyboardInterrupt|StopIteration|GeneratorExit))(?::(?: (?P<msg>.*))?)?\s*$"
)
_MARKER_RE = re.compile(r"^\s*[\^~]+\s*$")  # Python 3.11+ caret lines under the source line
# Tracebacks the server survives: one request failed.
NON_FATAL_HEADLINES = ("Exception in ASGI application", "Exception in callback", "Error in request")
MAX_EVENT_LINES = 400  # raw lines kept per event (evidence and display); the rest are counted only
MAX_FRAMES = 200
MAX_LINES_AFTER_EXC = 20  # multi-line exception messages; more than this and the traceback is over


@dataclass(slots=True)
class PendingEvent:
    line: int
    ctx: LineContext
    headline: str
    label: str = "Traceback"  # exc_type when no final exception line is seen (truncated traceback)
    label_msg: str = ""
    held: bool = False  # "Exception in run_tp_server:" waiting for its "Traceback" line
    end_line: int = 0
    lines: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    exc_msg: str = ""
    after_exc: int = 0
    last_was_frame: bool = False
    # The traceback's own indentation (a paste indented as a whole): lines indented this much or less are
    # the header, the exception line and "During handling ..."; frames and source lines sit deeper.
    base_indent: int = 0
    # faulthandler dumps (most recent call first), one block per thread: the crashing thread's block
    # ("Current thread ...") is kept, innermost last like a traceback's frames.
    recent_first: bool = False
    in_other_thread: bool = False

    def __post_init__(self) -> None:
        self.end_line = self.line
        self.lines.append(self.headline)

    def accepts(self, msg: str) -> bool:
        """Whether an un-prefixed line continues this event."""
        if self.held:
            return msg.lstrip().startswith("Traceback")
        if self.exc_type is not None and self.after_exc >= MAX_LINES_AFTER_EXC:
            return bool(FRAME_RE.match(msg)) or msg.lstrip().startswith(("Traceback", "During handling", "The above"))
        return True

    def add(self, n: int, msg: str) -> None:
        if self.held:
            self.held = False
            self.label = "Traceback"
        self.end_line = n
        if len(self.lines) < MAX_EVENT_LINES:
            self.lines.append(msg)
        self.consume(msg)

    def consume(self, msg: str) -> None:
        """Read frames and the exception line out of one traceback line."""
        if self.recent_first and "(most recent call first)" in msg:
            t = _THREAD_RE.match(msg)
            if t is not None:
                current = t.group("current") in ("Current thread", "Stack")
                if current or not self.frames:
                    self.frames.clear()
                    self.in_other_thread = False
                else:  # another thread after the one kept
                    self.in_other_thread = True
                return
        m = FRAME_RE.match(msg)
        if m is not None:
            if self.in_other_thread:
                return
            if len(self.frames) < MAX_FRAMES:
                self.frames.append(Frame(m.group("file"), int(m.group("lineno")), m.group("func").strip()))
            self.last_was_frame = True
            return
        body = msg
        if msg[:1].isspace():
            body = msg.lstrip()
            if len(msg) - len(body) > self.base_indent:  # deeper than the traceback itself
                if self.last_was_frame and not _MARKER_RE.match(msg):
                    if self.frames:
                        last = self.frames[-1]
                        self.frames[-1] = Frame(last.file, last.lineno, last.func, msg.strip())
                    self.last_was_frame = False
                    return
                body = ""
        self.last_was_frame = False
        if body:
            m = EXC_RE.match(body)
            if m is not None:
                self.exc_type = m.group("type")
                self.exc_msg = (m.group("msg") or "").strip()
                self.after_exc = 0
                return
        if self.exc_type is not None:
            self.after_exc += 1

    def headline_exception(self) -> None:
        """The opener itself may carry the exception ("... hit an exception: ValueError: x")."""
        tail = self.headline.rsplit(": ", 1)
        if len(tail) == 2:
            m = EXC_RE.match(tail[1])
            if m is not None:
                self.exc_type, self.exc_msg = m.group("type"), (m.group("msg") or "").strip()

    def close(self) -> ErrorEvent:
        if self.recent_first:
            self.frames.reverse()
        exc_type = self.exc_type or self.label
        message = self.exc_msg if self.exc_type is not None else (self.label_msg or self.headline.strip())
        return ErrorEvent(
            fatal=not any(text in self.headline for text in NON_FATAL_HEADLINES),
            line=self.line,
            ctx=self.ctx,
            exc_type=exc_type,
            message=message,
            end_line=self.end_line,
            headline=self.headline,
            frames=tuple(self.frames),
            lines=tuple(self.lines),
        )
