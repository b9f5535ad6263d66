"""Record SGLang release clues while parsing (docs/REFERENCE.md §3.1–3.3 tables, §1.4 prog names, §7 notes)."""

from __future__ import annotations

import re

from spectui.core.log.records import LineContext
from spectui.core.log.versionguess import VersionHints

# Decode/prefill fields that first appeared in a known release (docs/REFERENCE.md §3.2 / §3.3).
_FIELD_SINCE: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("accept rate: ", (0, 5, 4)),
    ("est. decode TFLOPS", (0, 5, 10)),
    ("fwd occupancy: ", (0, 5, 12)),
    ("cap len: ", (0, 5, 18)),
    ("block accept len: ", (0, 5, 18)),
    ("#host-receive-req: ", (0, 5, 18)),
    ("musa graph: ", (0, 5, 18)),
    ("#pending-token: ", (0, 5, 12)),
    ("waiting-image-req: ", (0, 5, 9)),
    ("#prealloc-req: ", (0, 5, 3)),
)
_GRAPH_RE = re.compile(r"\b(?:cuda|cpu|npu|musa|xpu) graph: ")


def note_prefix(hints: VersionHints, style: str, ctx: LineContext, raw: str) -> None:
    if style == "sglang":
        if raw.startswith("[") and raw[20:21] in (".", ","):
            hints.add("prefix_ms", (0, 5, 6), None, weak=True)  # SGLANG_LOG_MS=1
        tags = ctx.tags
        if tags:
            if "ATTN_CP" in tags or "MOE_DP" in tags:
                hints.add("tag_attn_cp", (0, 5, 9), None)
            if "PP" in tags and "TP" in tags and tags.index("PP") < tags.index("TP"):
                hints.add("tag_pp_before_tp", (0, 5, 6), None)
            elif "EP" in tags:
                hints.add("tag_ep", (0, 4, 10), None)
    elif style == "sglang_time_only":
        # 2024 "[HH:MM:SS TPn]" prefix, before the date was added (approximate boundary).
        hints.add("prefix_time_only", None, (0, 3, 6), weak=True)
    elif style == "gpu_id":
        hints.add("prefix_gpu_id", None, (0, 2, 15), weak=True)


def note_batch(hints: VersionHints, m: re.Match[str]) -> None:
    """Clues from a Decode/Prefill header and body; cheap after the first few lines (set-once keys)."""
    form = m.group("form")
    kind = m.group("kind")
    if kind == "Decode":
        if form == ".":
            hints.add("decode_dot", None, (0, 5, 3))
        elif form == ",":
            hints.add("decode_comma", (0, 5, 5), None)
        else:
            # Always shown in 0.5.4; 0.5.5–0.5.8 only with SGLANG_LOG_FORWARD_ITERS=1.
            hints.add("decode_iter", (0, 5, 4), None)
            hints.add("decode_iter_default", (0, 5, 4), (0, 5, 4), weak=True)
        body = m.group("body")
        trailing = body.rstrip(" ").endswith(",")
        has_graph = _GRAPH_RE.search(body) is not None
        if trailing and "#queue-req: " in body[-24:]:
            hints.add("decode_trailing_comma", None, (0, 5, 8))
        elif not trailing and body.rstrip().rsplit(", ", 1)[-1].startswith("#queue-req: "):
            if form == ",":
                hints.add("decode_no_trailing_comma", (0, 5, 9), None)
            elif form == "." and has_graph:
                hints.add("decode_dot_no_trailing_comma", (0, 4, 9), (0, 4, 9), weak=True)
        if not has_graph:
            hints.add("decode_no_graph_field", None, (0, 4, 6), weak=True)
        for text, since in _FIELD_SINCE:
            if text in body:
                hints.add(f"field:{text}", since, None)
    else:
        if form.startswith(" ["):
            hints.add("prefill_iter", (0, 5, 4), None)
        body = m.group("body")
        for text, since in _FIELD_SINCE:
            if text in body:
                hints.add(f"field:{text}", since, None)


def note_milestone(hints: VersionHints, kind: str, text: str) -> None:
    if kind == "server_args":
        if "server_args={" in text:
            hints.add("server_args_dict", (0, 5, 20), None)
        elif "server_args=ServerArgs(" in text:
            hints.add("server_args_repr", None, (0, 5, 18))
    elif kind == "argparse_prog":
        if text == "sglang serve":
            hints.add("prog_sglang_serve", (0, 5, 10), None)
        elif text == "launch_server.py":
            hints.add("prog_launch_server", None, (0, 5, 9))
        elif text == "sglang":
            hints.add("prog_sglang", (0, 5, 5), (0, 5, 9))
    elif kind == "kv_allocated" and "KV Cache is allocated. dtype: " in text:
        hints.add("kv_dtype_field", (0, 5, 9), None, weak=True)
