"""The work behind `spectui check`: read a log in large chunks through the Pipeline, build the JSON result."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from spectui.commands.check.sniff import looks_binary as _looks_binary
from spectui.core.log import ErrorEvent, MetricSnapshot, Pipeline, RecordKind, WarningEvent, guess_version

CHUNK = 8 * 1024 * 1024
MAX_ERRORS = 200  # listed in the result; all are counted
MAX_WARNINGS = 50  # distinct warning texts kept for the human summary
_BINARY_SNIFF = 65536


class CheckInputError(Exception):
    """A PATH that cannot be read; the message is one line for the operator."""


def open_input(path: str) -> tuple[IO[bytes], str]:
    if path == "-":
        return sys.stdin.buffer, "<stdin>"
    if os.path.isdir(path):
        raise CheckInputError(f"{path} is a directory; give the log file inside it")
    try:
        return open(path, "rb"), path  # noqa: SIM115 - closed by the caller
    except FileNotFoundError:
        raise CheckInputError(f"{path}: no such file; give the path of an SGLang log file (or - for stdin)") from None
    except PermissionError:
        raise CheckInputError(f"{path}: permission denied; check the file's permissions or copy it") from None
    except OSError as exc:
        raise CheckInputError(f"{path}: cannot read ({exc.strerror or exc}); give a readable log file") from None


@dataclass(slots=True)
class CheckResult:
    lines: int
    counts: dict[RecordKind, int]
    version_guess: str | None
    launches: list[MetricSnapshot]
    current: MetricSnapshot
    errors: list[ErrorEvent]
    errors_total: int
    diagnoses: list[Any] = field(default_factory=list)
    looks_binary: bool = False
    warnings: dict[str, WarningEvent] = field(default_factory=dict)  # first of each distinct text
    parallel_chunks: int = 0  # chunks counted by the worker process (checkpar), not in the JSON

    @property
    def recognised(self) -> int:
        """Lines the parser read as SGLang's (every kind but "other")."""
        return sum(v for k, v in self.counts.items() if k is not RecordKind.OTHER)

    def to_json(self) -> dict[str, Any]:
        cur = self.current
        return {
            "lines": self.lines,
            "records": {k.value: self.counts.get(k, 0) for k in RecordKind},
            "sglang_version_guess": self.version_guess,
            "launches": self.current.launch,
            "phase": cur.phase.value,
            "decode": _decode_json(cur),
            "errors": [_error_json(e) for e in self.errors],
            "errors_total": self.errors_total,
            "launch_list": [_launch_json(s) for s in self.launches],
            "server_args": dict(cur.server_args) if cur.server_args is not None else None,
            "diagnoses": [_diagnosis_json(d) for d in self.diagnoses],
        }


def _decode_json(s: MetricSnapshot) -> dict[str, Any]:
    a, r, t = s.accept_len, s.accept_rate, s.gen_tokens_per_s
    return {
        "samples": s.samples,
        "accept_len": {"last": a.last, "mean": a.mean, "p10": a.p10, "p90": a.p90},
        "accept_rate": {"last": r.last, "mean": r.mean, "p10": r.p10, "p90": r.p90},
        "gen_tokens_per_s": {"last": t.last, "mean": t.mean, "p10": t.p10, "p90": t.p90},
        "running_req": {"last": s.running_req},
        "queue_req": {"last": s.queue_req},
        "token_usage": {"last": s.token_usage},
        "graph": {"last": s.graph},
    }


def _launch_json(s: MetricSnapshot) -> dict[str, Any]:
    return {
        "launch": s.launch,
        "first_line": s.launch_first_line,
        "last_line": s.last_line,
        "phase": s.phase.value,
        "decode": _decode_json(s),
        "prefill_samples": s.prefill_samples,
        "errors": s.errors,
        "warnings": s.warnings,
    }


def _error_json(e: ErrorEvent) -> dict[str, Any]:
    return {
        "line": e.line,
        "end_line": e.end_line or e.line,
        "kind": e.exc_type,
        "summary": e.message or e.exc_type,
        "headline": e.headline,
        "frames": len(e.frames),
    }


def _diagnosis_json(d: Any) -> Any:
    to_json = getattr(d, "to_json", None)
    return to_json() if to_json is not None else d


def check_stream(stream: IO[bytes], *, engine: Any = None, chunk_size: int = CHUNK,
                 parallel: bool = True, steal: bool = True) -> CheckResult:
    """`parallel`: on a big regular file, a forked worker counts chunks from the end (checkpar); with
    `steal` this process counts the chunks the worker has not started when it gets to them."""
    from spectui.commands.check.par import parallel_for

    pipe = Pipeline(engine=engine, bulk=True)
    par = parallel_for(stream, chunk_size, steal=steal) if parallel else None
    pipe.parser.segmenter = par
    errors: list[ErrorEvent] = []
    errors_total = 0
    head = b""
    diagnoses: dict[Any, Any] = {}

    warnings: dict[str, WarningEvent] = {}

    def take(records: tuple[Any, ...]) -> None:
        nonlocal errors_total
        for rec in records:
            kind = type(rec)
            if kind is ErrorEvent:
                errors_total += 1
                if len(errors) < MAX_ERRORS:
                    errors.append(rec)
            elif kind is WarningEvent and rec.text not in warnings and len(warnings) < MAX_WARNINGS:
                warnings[rec.text] = rec

    try:
        index = 0
        # Two buffers read into in turn: a fresh 8 MB bytes a chunk costs more (page faults, zeroing) than a
        # counting pass. The parser may still hold the previous chunk's last bytes (a run's tail), so a
        # buffer is released (those bytes copied) before it is read into again.
        buffers = [bytearray(chunk_size), bytearray(chunk_size)]
        readinto = getattr(stream, "readinto", None)
        while True:
            if readinto is None:
                chunk: bytes | bytearray = stream.read(chunk_size)
                got = len(chunk)
            else:
                buf = buffers[index % 2]
                pipe.parser.release(buf)
                got = readinto(buf) or 0
                chunk = buf if got == chunk_size else bytes(memoryview(buf)[:got])
            if not got:
                break
            if len(head) < _BINARY_SNIFF:
                head += chunk[: _BINARY_SNIFF - len(head)]
            if par is not None:
                par.start_chunk(index, chunk)
            index += 1
            take(pipe.feed_bytes(chunk).records)
        take(pipe.finish().records)
    except OSError as exc:
        raise CheckInputError(f"read failed ({exc.strerror or exc})") from None
    finally:
        if par is not None:
            par.close()
    parallel_chunks = par.used if par is not None else 0
    if engine is not None:
        for d in pipe.diagnoses:
            diagnoses[id(d)] = d
    parser = pipe.parser
    counts = dict(parser.counts)
    recognised = sum(v for k, v in counts.items() if k is not RecordKind.OTHER)
    return CheckResult(
        lines=parser.lines_seen,
        counts=counts,
        version_guess=guess_version(parser.version_hints),
        launches=pipe.metrics.snapshot_all(),
        current=pipe.snapshot,
        errors=errors,
        errors_total=errors_total,
        diagnoses=list(diagnoses.values()),
        looks_binary=recognised == 0 and _looks_binary(head),
        warnings=warnings,
        parallel_chunks=parallel_chunks,
    )
