"""Typed records that LogParser produces from SGLang log text: the vocabulary every layer above speaks.

Records are frozen, slotted dataclasses. Every record carries `line` (1-based number of its first line
in the stream) so evidence can always point back at the log. Fields SGLang printed that this module does
not name are kept in `fields` (verbatim key -> verbatim value), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class RecordKind(StrEnum):
    """The `records` keys of `spectui check --json`."""

    DECODE = "decode"
    PREFILL = "prefill"
    MILESTONE = "milestone"
    WARNING = "warning"
    ERROR = "error"
    OTHER = "other"


class MilestoneKind(StrEnum):
    """Start-up (and shut-down) steps of an SGLang server, docs/REFERENCE.md §3.4."""

    SERVER_ARGS = "server_args"  # `server_args=ServerArgs(...)` / `server_args={...}`: a launch starts here
    DIST_INIT = "dist_init"  # Init torch distributed begin/ends
    WEIGHTS_BEGIN = "weights_begin"  # Load weight begin
    WEIGHTS_LOADED = "weights_loaded"  # Load weight end (target)
    DRAFT_WEIGHTS_LOADED = "draft_weights_loaded"  # Load weight end of a draft architecture (…Eagle3, …NextN, …MTP)
    KV_ALLOCATED = "kv_allocated"  # KV Cache is allocated
    MEMORY_POOL_END = "memory_pool_end"
    GRAPH_CAPTURE_BEGIN = "graph_capture_begin"
    GRAPH_CAPTURE_END = "graph_capture_end"
    CAPACITY = "capacity"  # max_total_num_tokens=..., max_running_requests=...
    UVICORN_UP = "uvicorn_up"  # Uvicorn running on ...
    FIRED_UP = "fired_up"  # The server is fired up and ready to roll!
    SHUTDOWN = "shutdown"  # uvicorn "Shutting down" / "Finished server process"
    ARGPARSE_USAGE = "argparse_usage"  # "usage: launch_server.py [-h] ...": a process started parsing flags


@dataclass(frozen=True, slots=True)
class LineContext:
    """What the line prefix said: timestamp and scheduler tags (`DP1 TP4 EP4`), when present."""

    ts: str | None = None  # as printed: "2025-12-03 10:00:05", "10:00:05" (2024 format), RFC3339 …
    tags: str = ""  # "DP0 TP0", "TP3", "" (main process)
    dp_rank: int | None = None
    tp_rank: int | None = None


@dataclass(frozen=True, slots=True)
class DecodeSample:
    """One `Decode batch` line (one DP rank, one log interval)."""

    line: int
    ctx: LineContext
    running_req: int | None = None
    queue_req: int | None = None
    tokens: int | None = None  # "#token" (or "#full token" on hybrid models)
    token_usage: float | None = None  # "token usage" (or "full token usage")
    accept_len: float | None = None
    accept_rate: float | None = None  # SGLang's own; its formula changed across releases (docs/REFERENCE.md §3.2)
    graph: bool | None = None  # "cuda graph" / "cpu graph" / "npu graph" / "musa graph"
    gen_tokens_per_s: float | None = None
    iteration: int | None = None  # "Decode batch [N]," counter
    fields: dict[str, str] = field(default_factory=dict)  # every "key: value" printed, verbatim
    # Bulk reading (`spectui check`) counts long runs of decode/prefill lines without parsing each one;
    # the first parsed sample after such a run carries how many it stands for (metrics add them).
    skipped_decode: int = 0
    skipped_prefill: int = 0


@dataclass(frozen=True, slots=True)
class PrefillSample:
    """One `Prefill batch` line."""

    line: int
    ctx: LineContext
    new_seq: int | None = None
    new_token: int | None = None
    cached_token: int | None = None
    running_req: int | None = None
    queue_req: int | None = None
    token_usage: float | None = None
    input_tokens_per_s: float | None = None
    fields: dict[str, str] = field(default_factory=dict)
    skipped_decode: int = 0  # see DecodeSample
    skipped_prefill: int = 0


@dataclass(frozen=True, slots=True)
class Milestone:
    """A start-up step. `detail` holds what the line says (e.g. {"type": "LlamaForCausalLMEagle3"},
    {"max_running_requests": 48, ...}); for SERVER_ARGS, `detail` is the parsed resolved-args dict."""

    line: int
    ctx: LineContext
    kind: MilestoneKind
    text: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WarningEvent:
    """A warning: a WARNING-level log line, a bare pre-logging resolution warning (≤0.5.10), a Python
    `UserWarning`, a deprecation notice, or an SGLang notice such as `Max running requests is reset to 48`."""

    line: int
    ctx: LineContext
    text: str
    # "resolution" (a §2.4 flag-resolution text), "notice" (other SGLang notice), "level" (WARNING-level
    # prefix), "python" (`UserWarning:` etc.), "deprecation" (ANSI-coloured argparse deprecation)
    category: str = ""


@dataclass(frozen=True, slots=True)
class Frame:
    """One `File "...", line N, in func` frame of a traceback."""

    file: str
    lineno: int
    func: str
    source: str = ""  # the source line printed under the frame, stripped


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """An error: a whole traceback grouped into one event, an argparse `error:` line, or a one-line
    fatal message (NCCL error, CUDA OOM, `Received sigquit from a child process`, watchdog timeout …).

    `exc_type` is the exception class as printed (`AssertionError`, `torch.OutOfMemoryError`), or
    "ArgparseError" for argparse's `prog: error: msg`, or a short label for one-line errors ("SIGQUIT",
    "NCCL", "Watchdog"). `message` is the text after `ExcType: ` (may be empty: the bare AssertionError).
    """

    line: int
    ctx: LineContext
    exc_type: str
    message: str
    end_line: int = 0  # last line of the event (== line for one-line events)
    headline: str = ""  # the line that opened it, e.g. "Scheduler hit an exception: Traceback ..."
    frames: tuple[Frame, ...] = ()
    lines: tuple[str, ...] = ()  # the raw lines of the event (capped), for evidence and display
    # False when the server keeps running: a failed request ("Exception in ASGI application") or a plain
    # ERROR-level log line ("LoggedError"). Fatal events put the server phase to "crashed".
    fatal: bool = True


@dataclass(frozen=True, slots=True)
class OtherLine:
    """A line that is none of the above. The parser counts these; it only yields them when asked to."""

    line: int
    ctx: LineContext
    text: str


Record = DecodeSample | PrefillSample | Milestone | WarningEvent | ErrorEvent | OtherLine


def record_kind(record: Record) -> RecordKind:
    """The `check --json` bucket a record counts in."""
    return _KIND_BY_TYPE[type(record)]


_KIND_BY_TYPE: dict[type, RecordKind] = {
    DecodeSample: RecordKind.DECODE,
    PrefillSample: RecordKind.PREFILL,
    Milestone: RecordKind.MILESTONE,
    WarningEvent: RecordKind.WARNING,
    ErrorEvent: RecordKind.ERROR,
    OtherLine: RecordKind.OTHER,
}
