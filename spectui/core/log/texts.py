"""Exact SGLang texts the parser recognises (docs/REFERENCE.md §2.4, §3.4, §3.5), with the releases that print them.

Resolution warnings print as bare lines before logging is configured (≤0.5.10) and as `[ts] text` from
0.5.11, so they are recognised by their text, not by a prefix. Each entry's version range is a clue for
`guess_version`.
"""

from __future__ import annotations

import re
from typing import Any

V = tuple[int, ...]

# (text the message starts with, first release printing it, last release printing it) — None = open.
RESOLUTION_WARNINGS: tuple[tuple[str, V | None, V | None], ...] = (
    ("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
     (0, 4, 6), None),
    ("Max running requests is reset to 48 for speculative decoding. You can override this", (0, 5, 5), None),
    ("Max running requests is reset to 48 for speculative decoding.", (0, 5, 4), None),
    ("Overlap scheduler is disabled because of using eagle speculative decoding.", (0, 4, 4), (0, 5, 3)),
    ("Overlap scheduler is disabled because of using eagle3 and standalone speculative decoding.",
     (0, 5, 4), (0, 5, 4)),
    ("Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding.",
     (0, 5, 5), (0, 5, 6)),
    ("Beta spec is enabled for eagle speculative decoding and overlap schedule is turned on.",
     (0, 5, 4), (0, 5, 6)),
    ("Spec v2 is enabled for eagle/eagle3 speculative decoding and overlap schedule is turned on.",
     (0, 5, 7), (0, 5, 10)),
    ("Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm.",
     (0, 5, 7), (0, 5, 10)),
    ("Spec v1 is used for eagle/eagle3/standalone speculative decoding", (0, 5, 11), (0, 5, 12)),
    ("Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding.", (0, 5, 11), (0, 5, 12)),
    ("Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative decoding.",
     (0, 5, 15), None),
    ("Overlap schedule is not implemented for speculative decoding on CPU.", (0, 5, 15), None),
    ("Mixed chunked prefill is disabled because of using eagle speculative decoding.", (0, 4, 9), (0, 5, 18)),
    ("Mixed chunked prefill is disabled: ", (0, 5, 20), None),
    ("Mixed chunked prefill is disabled because of using Frozen-KV MTP", (0, 5, 12), None),
    ("Overlap scheduler is disabled when using Frozen-KV MTP", (0, 5, 12), (0, 5, 12)),
    ("Cuda graph is disabled because of using torch native attention backend", None, None),
    ("DeepSeek MTP does not require setting speculative_draft_model_path.", (0, 4, 9), None),
    ("Speculative token map specified, but EAGLE3 models already have this.", None, None),
    ("speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding.", (0, 5, 10), None),
    ("The overlap scheduler and mixed chunked prefill are disabled because of using ngram", (0, 5, 3), (0, 5, 12)),
    ("The mixed chunked prefill are disabled because of using ngram", (0, 5, 15), None),
    ("speculative_adaptive disabled: ", (0, 5, 12), None),
    ("DFLASH only supports speculative_num_steps == 1", (0, 5, 11), None),
    ("DFLASH only supports speculative_eagle_topk == 1", (0, 5, 11), None),
    ("speculative_num_draft_tokens is not set; defaulting to 16 for DFLASH.", (0, 5, 11), None),
    ("Overlap scheduler is disabled when using DFLASH", (0, 5, 11), (0, 5, 12)),
    ("DSpark only supports ", (0, 5, 18), None),
    ("DSpark gamma is not set; defaulting to ", (0, 5, 18), None),
    ("Setting max_running_requests to ", (0, 5, 15), None),
    ("The radix cache, chunked prefill, and overlap scheduler are disabled because of using eagle", None, None),
)
_RESOLUTION_FIRST_WORDS = frozenset(t.split(" ", 1)[0] for t, _, _ in RESOLUTION_WARNINGS)

# Other SGLang notices that are warnings whatever their level prefix says.
NOTICE_WARNINGS: tuple[str, ...] = (
    "KV cache pool is full. Retract requests.",
    "Endpoint '/get_model_info' is deprecated",
    "Endpoint '/get_server_info' is deprecated",
    "tokens, fewer than --context-length",  # 0.5.2x: "KV pool holds N tokens, fewer than --context-length C."
)


# Python logging's default format, what SGLang's loggers print when an embedding program (the Python
# `Engine(...)` API, a notebook) called logging.basicConfig() first: "WARNING:sglang.srt.server_args:<text>".
_PYLOGGING_DEFAULT = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[A-Za-z_][\w.]*:")


def strip_logging_default(msg: str) -> str:
    """`msg` without a leading "LEVEL:logger.name:" (Python logging's default format)."""
    m = _PYLOGGING_DEFAULT.match(msg) if msg[:1] in "DIWEC" else None
    return msg[m.end():] if m else msg


def match_resolution_warning(msg: str) -> tuple[str, V | None, V | None] | None:
    """The RESOLUTION_WARNINGS entry `msg` starts with, in every style SGLang logs it: bare (stderr before
    logging is configured), after a `[ts]` / `date LEVEL pid [file:line]` prefix (the caller strips those),
    or in Python logging's default "WARNING:sglang.srt.server_args:" form."""
    msg = strip_logging_default(msg)
    first = msg.split(" ", 1)[0]
    if first not in _RESOLUTION_FIRST_WORDS:
        return None
    for entry in RESOLUTION_WARNINGS:
        if msg.startswith(entry[0]):
            return entry
    return None


# One-line fatal messages -> short exc_type label (docs/REFERENCE.md §3.5). Searched in the message.
ONE_LINE_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Received sigquit from a child proces?s"), "SIGQUIT"),
    (re.compile(r"SIGQUIT received\."), "SIGQUIT"),
    (re.compile(r"Rank \d+ scheduler is dead"), "SchedulerDead"),
    (re.compile(r"[Ww]atchdog timeout|Watchdog caught collective operation timeout|detected by watchdog"), "Watchdog"),
    (re.compile(r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|NCCL WARN"
                r"|NCCL (?:work|operations)"), "NCCL"),
    (re.compile(r"Fatal Python error: "), "FatalPythonError"),
    (re.compile(r"^Segmentation fault\b|\bSIGSEGV\b|signal 11 \(SIGSEGV\)"), "Segfault"),
    (re.compile(r"Initialization failed\. warmup error"), "WarmupError"),
    (re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static"), "NotEnoughMemory"),
    (re.compile(r"Capture [\w\- ]*graph failed: "), "CudaGraphCaptureFailed"),
    # "Prefill/Decode out of memory." (0.4.x-), "Out of memory. Try to lower your batch size." (0.5.4+,
    # mem_cache/allocation.py), "Out of memory even after retracting all other requests" (0.5.8)
    (re.compile(r"(?:(?:Prefill|Decode) out|\bOut) of memory\. Try to lower your batch size\.|Out of memory even after retracting"),
     "OutOfMemory"),
    (re.compile(r"CUDA out of memory|CUDA error: out of memory|HIP out of memory|HIP error: out of memory"), "OutOfMemory"),
    (re.compile(r"Detected errors during sampling! NaN in the logits\."), "NaN"),
    (re.compile(r"Health check failed\."), "HealthCheckFailed"),
    (re.compile(r"Out Of Bound Tensor access detected"), "DeviceAssert"),
    (re.compile(r"device-side assert triggered"), "DeviceAssert"),
    # a CUDA kernel's own assert line: ".../Indexing.cu:1289: indexSelectLargeIndex: block: [0,0,0], thread:
    # [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed."
    (re.compile(r"\.cu:\d+: \w+: block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion `"), "DeviceAssert"),
    (re.compile(r"munmap_chunk\(\): invalid pointer|double free or corruption|free\(\): invalid pointer"), "Abort"),
    (re.compile(r"Initialization failed\. Please see the error messages above"), "InitializationFailed"),
)
# Cheap pre-test: a line can only be a one-line error if it holds one of these.
ONE_LINE_ERROR_HINTS: tuple[str, ...] = (
    "sigquit", "SIGQUIT", "dead", "atchdog", "NCCL", "nccl", "Fatal", "failed", "memory", "NaN",
    "Out Of Bound", "assert", "munmap", "free", "Segmentation", "SIGSEGV", "Assertion `",
)


_PY_WARNING_RE = re.compile(r"\b\w*Warning: ")


def warning_category(hints: Any, msg: str, prefixed: bool, level: str | None, colored: bool) -> str:
    """The WarningEvent category of a line, "" when it is no warning; notes version clues in `hints`."""
    entry = match_resolution_warning(msg)
    if entry is not None:
        text, lo, hi = entry
        hints.add(f"text:{text[:40]}", lo, hi)
        # Bare before logging is configured (≤0.5.10); "[ts] text" from 0.5.11 (docs/REFERENCE.md §2.1).
        # Python logging's default "WARNING:sglang.srt…:" form (an embedding program configured
        # logging) says nothing about the release: neither hint.
        if prefixed:
            hints.add("resolution_warning_prefixed", (0, 5, 11), None, weak=True)
        elif strip_logging_default(msg) == msg:
            hints.add("resolution_warning_bare", None, (0, 5, 10))
        return "resolution"
    if level in ("WARNING", "WARN"):
        return "level"
    for text in NOTICE_WARNINGS:
        if text in msg:
            return "notice"
    if "Warning: " in msg and _PY_WARNING_RE.search(msg):
        if "'python -m sglang.launch_server' is still supported" in msg:
            hints.add("launch_server_deprecation", (0, 5, 10), None)
        return "python"
    if colored and "deprecat" in msg.lower():
        return "deprecation"
    return ""
