"""What a report is made from: `ReportInput`, filled from a bundle (`report_input_from_bundle`) or from a
live target's `check --json` / `flags --json` objects (`report_input_from_check`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.bundle.logcut import CUT_MARK_RE, traceback_spans
from spectui.bundle.manifest import spectui_version
from spectui.bundle.reader import Bundle, SeriesPoint

_EXC_RE = re.compile(
    r"^(?P<kind>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure|Timeout)"
    r"|Exception|KeyboardInterrupt))(?::\s?(?P<msg>.*))?\s*$"
)
_ARGPARSE_RE = re.compile(r"(?:^|\s)\S+: error: (?P<msg>.+)$")
_LEVEL_RE = re.compile(r"(?:^|[\s\]])(?:ERROR|CRITICAL|FATAL)[\s:\]](?P<msg>.*)$")


@dataclass
class ReportInput:
    """Plain data for `render_report`; every field optional. Line numbers are the original log's."""

    sglang_version: str | None = None
    spectui_version: str | None = None
    target: str | None = None
    source: str = "live"  # "bundle FILE" | "live"
    created: float | None = None
    launch: dict[str, Any] | None = None  # {"command": "python -m sglang.launch_server …", "env": {...}}
    requested: dict[str, Any] = field(default_factory=dict)  # SGLang dest names
    effective: dict[str, Any] | None = None
    verdict: Any = None
    diagnoses: list[dict[str, Any]] = field(default_factory=list)  # check --json shape
    decode: dict[str, Any] | None = None  # check --json "decode" shape
    phase: str | None = None
    baseline_tps: float | None = None  # decode tok/s without speculation, when known
    bench: dict[str, Any] | None = None  # the latest bench --json
    first_error: dict[str, Any] | None = None  # {"kind", "summary", "line", "traceback"}
    error_span: tuple[int, int] | None = None  # 0-based indices into log_lines of the first error
    log_lines: list[str] = field(default_factory=list)
    line_numbers: list[int | None] | None = None  # original number of each log_lines entry (None: marker)
    gpus: list[dict[str, Any]] = field(default_factory=list)  # gpu.jsonl samples
    masked: list[str] = field(default_factory=list)  # names of masked secrets
    notes: list[str] = field(default_factory=list)

    def line_number(self, index: int) -> int | None:
        if self.line_numbers is not None:
            return self.line_numbers[index] if 0 <= index < len(self.line_numbers) else None
        return index + 1


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 4)


def _last(values: list[float]) -> float | None:
    return values[-1] if values else None


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def decode_summary(points: Sequence[SeriesPoint]) -> dict[str, Any] | None:
    """The series as a check-style `decode` object (null fields where the series has no value)."""
    if not points:
        return None
    acc = [v for p in points if (v := _num(p.accept_len)) is not None]
    tps = [v for p in points if (v := _num(p.gen_tokens_per_s)) is not None]
    run = [v for p in points if (v := _num(p.running_req)) is not None]
    queue = [v for p in points if (v := _num(p.queue_req)) is not None]
    return {
        "samples": len(points),
        "accept_len": {"last": _last(acc), "mean": _mean(acc), "p10": _pct(acc, 0.1), "p90": _pct(acc, 0.9)},
        "gen_tokens_per_s": {"last": _last(tps), "mean": _mean(tps)},
        "running_req": {"last": _last(run)},
        "queue_req": {"last": _last(queue)},
    }


def _exception_of(lines: Sequence[str]) -> tuple[str, str]:
    for line in reversed(lines):
        m = _EXC_RE.match(line.strip())
        if m:
            return m.group("kind"), (m.group("msg") or "").strip()
    return "Traceback", ""


def find_first_error(lines: Sequence[str]) -> tuple[int, int, str, str] | None:
    """(first, last, kind, summary) of the first error in the log: a traceback or an argparse
    `error:` line, whichever comes first; else the first ERROR-level line."""
    spans = traceback_spans(lines)
    tb = spans[0] if spans else None
    arg = next((i for i, line in enumerate(lines) if _ARGPARSE_RE.search(line)), None)
    if arg is not None and (tb is None or arg < tb[0]):
        return arg, arg, "argparse", _ARGPARSE_RE.search(lines[arg]).group("msg").strip()  # type: ignore[union-attr]
    if tb is not None:
        kind, msg = _exception_of(lines[tb[0] : tb[1] + 1])
        return tb[0], tb[1], kind, msg
    for i, line in enumerate(lines):
        if CUT_MARK_RE.match(line):
            continue
        m = _LEVEL_RE.search(line)
        if m:
            return i, i, "ERROR", m.group("msg").strip()[:300]
    return None


def fill_first_error(inp: ReportInput, near: int | None = None) -> None:
    """Fill first_error / error_span from inp.log_lines (`near`: the index a check reported)."""
    found = find_first_error(inp.log_lines[near:] if near else inp.log_lines)
    if found is None:
        return
    a, b, kind, msg = found
    if near:
        a, b = a + near, b + near
    inp.error_span = (a, b)
    tb = "\n".join(inp.log_lines[a : b + 1]) if b > a or kind != "ERROR" else None
    inp.first_error = {"kind": kind, "summary": msg, "line": inp.line_number(a), "traceback": tb}


def _latest_bench(history: Mapping[str, Any]) -> dict[str, Any] | None:
    bench = [b for b in history.get("bench") or [] if isinstance(b, dict)]
    return bench[-1] if bench else None


def _baseline(bench: Mapping[str, Any] | None, history: Mapping[str, Any]) -> float | None:
    if _num(history.get("baseline_tps")) is not None:
        return _num(history["baseline_tps"])
    base = (bench or {}).get("baseline") or {}
    return _num(base.get("output_tokens_per_s")) if isinstance(base, dict) else None


def report_input_from_bundle(bundle: Bundle) -> ReportInput:
    m = bundle.manifest
    lines = bundle.log_lines()
    history = bundle.history
    bench = _latest_bench(history)
    launch = bundle.launch
    inp = ReportInput(
        sglang_version=m.sglang_version,
        spectui_version=m.spectui_version,
        target=m.target,
        source=f"bundle {bundle.path.name}",
        created=m.created,
        launch={"command": launch.get("command"), "env": launch.get("env") or {}} if launch.get("command") else None,
        requested=dict(bundle.requested),
        effective=bundle.effective,
        verdict=bundle.verdict,
        diagnoses=bundle.diagnoses,
        decode=decode_summary(bundle.series),
        phase=bundle.config.get("phase"),
        baseline_tps=_baseline(bench, history),
        bench=bench,
        log_lines=lines,
        line_numbers=[bundle.original_line(i + 1) for i in range(len(lines))],
        gpus=bundle.gpu,
        masked=m.masked_names,
    )
    if m.log.get("cut"):
        inp.notes.append(
            f"the bundle's log is cut to {m.log.get('bytes')} of {m.log.get('original_bytes')} bytes "
            "(start-up line and tracebacks kept)"
        )
    fill_first_error(inp)
    return inp


def report_input_from_check(
    check: Mapping[str, Any],
    *,
    flags: Mapping[str, Any] | None = None,
    launch: Mapping[str, Any] | None = None,
    log_text: str | None = None,
    target: str | None = None,
    bench: Mapping[str, Any] | None = None,
) -> ReportInput:
    """A live target: `check --json`, optionally `flags --json` (requested/effective), the launch
    {"command", "env"} and the log text (for the traceback and the excerpt)."""
    flags = flags or {}
    inp = ReportInput(
        sglang_version=flags.get("sglang_version") or check.get("sglang_version_guess"),
        spectui_version=spectui_version(),
        target=target,
        launch=dict(launch) if launch else None,
        requested=dict(flags.get("requested") or {}),
        effective=flags.get("effective"),
        verdict=flags.get("outcome"),
        diagnoses=[d for d in check.get("diagnoses") or [] if isinstance(d, dict)],
        decode=check.get("decode"),
        phase=check.get("phase"),
        bench=dict(bench) if bench else None,
        baseline_tps=_baseline(bench, {}),
        log_lines=log_text.splitlines() if log_text else [],
    )
    seen = {d.get("rule") for d in inp.diagnoses}
    inp.diagnoses += [d for d in flags.get("diagnoses") or [] if isinstance(d, dict) and d.get("rule") not in seen]
    errors = [e for e in check.get("errors") or [] if isinstance(e, dict)]
    if inp.log_lines:
        near = errors[0].get("line") if errors else None
        fill_first_error(inp, near - 1 if isinstance(near, int) and near > 1 else None)
    if inp.first_error is None and errors:
        e = errors[0]
        inp.first_error = {"kind": e.get("kind"), "summary": e.get("summary"), "line": e.get("line"), "traceback": None}
    return inp
