"""Line prefixes of SGLang logs: container wrappers, SGLang's own `[ts TAGS]`, python-logging styles.

`split_prefix(line)` returns the `LineContext`, the message after the prefix, whether the line carried
a log prefix at all (un-prefixed lines continue a traceback), the level word when one was printed,
and the name of the prefix style (a version clue).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spectui.core.log.records import LineContext
from spectui.core.text import strip_escapes

# Wrappers put in front of SGLang's own prefix by whatever collected the log; stripped first.
# Ray: "(SchedulerActor pid=123, ip=10.0.0.1) "; docker compose: "llm0-1  | "; k8s / log collectors:
# "[2025-02-27T16:30:43.48675097Z] " or "2025-02-27T16:30:43.486Z ".
# CRI (containerd / CRI-O node logs): "2025-01-01T00:00:00.000000000Z stderr F "; kubectl logs --prefix:
# "[pod/sglang-0/server] "; journald / syslog: "Jan 01 00:00:00 host python[123]: " (also after an RFC3339
# timestamp: "2025-01-01T00:00:00+00:00 host python3[123]: ").
_CONTAINER_RE = re.compile(
    r"^(?:\([\w.\-]+ pid=\d+(?:, ip=[\d.]+)?\) "
    r"|[\w.\-]+-\d+\s+\| "
    r"|\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\] "
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:(?:stdout|stderr) [FP] )?"
    r"(?:[\w.\-]+ [\w.\-/]+\[\d+\]: )?"
    r"|\[(?:pod|deployment|statefulset|job|daemonset|replicaset)/[^\]\s]+\] "
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d [\w.\-]+ [\w.\-/]+\[\d+\]: "
    # a log viewer's export (Loki/Grafana, CloudWatch): "2025-01-01 00:00:00.000 " before each line; not
    # when a level word follows (python-logging's own "date time LEVEL pid [file:line]" prefix stays whole)
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: ?(?:Z|UTC|[+-]\d\d:?\d\d))? (?:(?:stdout|stderr) [FP] )?"
    r"(?!(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b)"
    # Slurm `srun --label` ("0: ", " 12: ") and Open MPI `--tag-output` ("[1,0]<stderr>:")
    r"|\[\d+,\d+\]<std(?:out|err)>: ?"
    r"| {0,3}\d{1,4}: )"
)
_MONTHS = frozenset(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))

_TAG = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP|CP)\d+"
# SGLang's formatter: "[2025-12-03 10:00:05 DP1 TP4 EP4] msg"; 2024: "[23:17:01 TP7] msg"; ms with SGLANG_LOG_MS.
_SGLANG_RE = re.compile(
    rf"^\[(?:(?P<date>\d{{4}}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d)(?P<ms>[.,]\d+)?(?P<tags>(?: {_TAG})*)\] ?"
)
_GPU_ID_RE = re.compile(r"^\[gpu_id=(?P<gpu>\d+)\] ")  # mid-2024 (~0.2.x)
# python-logging style configs: "2026-03-18 11:22:05.874 INFO 120984 [ TP0 scheduler_metrics_mixin.py:415] msg"
_PYLOG_RE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?P<ms>[.,]\d+)? "
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?:\d+ )?"
    rf"\[ ?(?P<tags>(?:{_TAG} )*)[^\]\s]+:\d+\] "
)
# vLLM-style (seen at the top of SGLang logs from shared imports): "INFO 03-06 10:05:08 __init__.py:190] msg"
_VLLM_RE = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<date>\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)? "
    r"[^\]\s]+:\d+\] "
)
# glog (torch C++): "W1130 14:23:46.255000 27915 torch/distributed/run.py:793] msg"
_GLOG_RE = re.compile(r"^(?P<level>[IWEF])\d{4} (?P<time>\d\d:\d\d:\d\d)\.\d+ +\d+ [^\]\s]+:\d+\] ")
# torch ProcessGroupNCCL: "[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] msg"
_TORCH_RANK_RE = re.compile(r"^\s*\[rank(?P<rank>\d+)\]:\[(?P<level>[IWEF])\d{3,4} (?P<time>[\d:]+)[.\d]* [^\]\s]+:\d+\] ")
# Uvicorn's level prefix, inside SGLang's prefix or bare: "INFO:     Started server process [1802867]"
_LEVEL_WORD_RE = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
# MindSpore / other native loggers: "[WARNING] ME(1624099,...)"
_BRACKET_LEVEL_RE = re.compile(r"^\[(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ")

_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
_NO_CTX = LineContext()


@dataclass(frozen=True, slots=True)
class Prefixed:
    ctx: LineContext
    msg: str
    prefixed: bool  # the line carried a logger prefix (so it is not a traceback continuation)
    level: str | None  # "INFO", "WARNING", "ERROR", … when printed
    style: str  # "sglang", "sglang_time_only", "gpu_id", "pylog", "vllm", "glog", "torch_rank", "uvicorn", "" (none)
    indent: int = 0  # leading blanks before the prefix (a paste indented as a whole)


def strip_ansi(line: str) -> str:
    return strip_escapes(line)


def strip_container(line: str) -> str:
    # At most two wrappers (e.g. a k8s timestamp around a docker-compose prefix).
    for _ in range(2):
        m = _CONTAINER_RE.match(line)
        if m is None:
            break
        line = line[m.end() :]
    return line


_TAG_CACHE: dict[str, tuple[str, int | None, int | None]] = {}


def _parse_tags(raw: str) -> tuple[str, int | None, int | None]:
    tags = " ".join(raw.split())
    dp = tp = None
    for tag in tags.split():
        if tag.startswith("DP"):
            dp = int(tag[2:])
        elif tag.startswith("TP"):
            tp = int(tag[2:])
    if len(_TAG_CACHE) < 4096:  # a handful of distinct tag strings per server
        _TAG_CACHE[raw] = (tags, dp, tp)
    return tags, dp, tp


def _tags_ctx(ts: str | None, raw_tags: str) -> LineContext:
    if not raw_tags:
        return LineContext(ts=ts)
    tags, dp, tp = _TAG_CACHE.get(raw_tags) or _parse_tags(raw_tags)
    return LineContext(ts=ts, tags=tags, dp_rank=dp, tp_rank=tp)


def _ts(m: re.Match[str]) -> str:
    date, time = m.group("date"), m.group("time")
    return f"{date} {time}" if date else time


def split_prefix(line: str) -> Prefixed:
    """Split one line (ANSI already stripped) into context and message."""
    if (line[:1] in ("(", "[") or (line[:1].isalnum() and "|" in line[:64]) or line[:1].isdigit()
            or line[:3] in _MONTHS):
        line = strip_container(line)
    first = line[:1]
    if first in (" ", "\t"):
        # A paste indented as a whole: a logger prefix after the indentation is still a prefix.
        body = line.lstrip(" \t")
        if body[:1] in ("[", "(") or body[:1].isdigit() or body[:3] in _MONTHS:
            inner = split_prefix(body)
            if inner.prefixed:
                return Prefixed(inner.ctx, inner.msg, True, inner.level, inner.style, len(line) - len(body))
            if inner.msg is not body:  # a collector's wrapper after the indentation, then an un-prefixed line
                return inner
    if first == "[":
        m = _SGLANG_RE.match(line)
        if m is not None:
            ctx = _tags_ctx(_ts(m), m.group("tags"))
            msg = line[m.end() :]
            style = "sglang" if m.group("date") else "sglang_time_only"
            lm = _LEVEL_WORD_RE.match(msg)
            if lm is not None:
                return Prefixed(ctx, msg[lm.end() :], True, lm.group("level"), "uvicorn")
            return Prefixed(ctx, msg, True, None, style)
        m = _GPU_ID_RE.match(line)
        if m is not None:
            gpu = int(m.group("gpu"))
            return Prefixed(LineContext(tags=f"gpu_id={gpu}", tp_rank=gpu), line[m.end() :], True, None, "gpu_id")
        m = _BRACKET_LEVEL_RE.match(line)
        if m is not None:
            return Prefixed(_NO_CTX, line[m.end() :], True, m.group("level"), "bracket_level")
    elif first.isdigit():
        m = _PYLOG_RE.match(line)
        if m is not None:
            level = m.group("level")
            return Prefixed(_tags_ctx(_ts(m), m.group("tags")), line[m.end() :], True, level, "pylog")
    elif first in "IWEF":
        m = _GLOG_RE.match(line)
        if m is not None:
            level = _GLOG_LEVELS[m.group("level")]
            return Prefixed(LineContext(ts=m.group("time")), line[m.end() :], True, level, "glog")
    if first in "DIWEC":
        m = _VLLM_RE.match(line)
        if m is not None:
            return Prefixed(LineContext(ts=_ts(m)), line[m.end() :], True, m.group("level"), "vllm")
        m = _LEVEL_WORD_RE.match(line)
        if m is not None:
            return Prefixed(_NO_CTX, line[m.end() :], True, m.group("level"), "uvicorn")
    if "[rank" in line[:16]:
        m = _TORCH_RANK_RE.match(line)
        if m is not None:
            ctx = LineContext(ts=m.group("time"), tags=f"rank{m.group('rank')}")
            return Prefixed(ctx, line[m.end() :], True, _GLOG_LEVELS[m.group("level")], "torch_rank")
    return Prefixed(_NO_CTX, line, False, None, "")
