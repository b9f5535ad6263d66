"""Turn one SGLang message into a DecodeSample, PrefillSample or Milestone (docs/REFERENCE.md §3.2–3.4).

Field names are SGLang's verbatim keys; every `key: value` printed is kept in `fields`, including keys
this module has never seen.
"""

from __future__ import annotations

import re

from spectui.core.log.records import DecodeSample, LineContext, Milestone, MilestoneKind, PrefillSample
from spectui.core.log.serverargs import parse_server_args

# "Decode batch." (≤0.5.3), "Decode batch [N]," (0.5.4 / SGLANG_LOG_FORWARD_ITERS), "Decode batch," (0.5.5+)
# Not after a quote: a line quoting the format ('"Decode batch, ..."') is not a decode line.
BATCH_RE = re.compile(r"(?<![\"'])(?P<kind>Decode|Prefill) batch(?P<form>\.| \[(?P<iter>\d+)\],|,) (?P<body>.*)$")

_TOKENS_KEYS = ("#token", "#full token", "#gpu token")
_USAGE_KEYS = ("token usage", "full token usage", "gpu token usage")


def split_fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in body.rstrip().rstrip(",").split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return int(float(v))
        except ValueError:
            return None


def _float(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v.rstrip("%"))
    except ValueError:
        return None


def _first(fields: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if k in fields:
            return fields[k]
    return None


def graph_field(fields: dict[str, str]) -> tuple[str | None, bool | None]:
    for key, value in fields.items():
        if key.endswith(" graph") and value in ("True", "False"):
            return key, value == "True"
    return None, None


def make_decode(n: int, ctx: LineContext, m: re.Match[str]) -> DecodeSample:
    return _decode(n, ctx, split_fields(m.group("body")), m.group("iter"))


def _decode(n: int, ctx: LineContext, fields: dict[str, str], it: str | None) -> DecodeSample:
    _, graph = graph_field(fields)
    return DecodeSample(
        line=n,
        ctx=ctx,
        running_req=_int(fields.get("#running-req")),
        queue_req=_int(fields.get("#queue-req")),
        tokens=_int(_first(fields, _TOKENS_KEYS)),
        token_usage=_float(_first(fields, _USAGE_KEYS)),
        accept_len=_float(fields.get("accept len")),
        accept_rate=_float(fields.get("accept rate")),
        graph=graph,
        gen_tokens_per_s=_float(fields.get("gen throughput (token/s)")),
        iteration=int(it) if it else None,
        fields=fields,
    )


_FRAGMENT_KEYS = ("accept len", "gen throughput (token/s)")
_FRAGMENT_VALUE_RE = re.compile(r"-?\d+(?:\.\d+)?%?|True|False")


def make_decode_fragment(n: int, ctx: LineContext, msg: str) -> DecodeSample | None:
    """A decode line pasted without its `Decode batch` start ("accept len: 1.00, accept rate: 0.00, ..."):
    a DecodeSample when the whole line is `key: number` pairs (two or more) and one key is a decode-only
    one (accept len, gen throughput), else None."""
    text = msg.strip().rstrip(",")
    parts = [p for p in text.split(", ") if p.strip(" .…")]  # a paste's "..." / "…" between fields
    if len(parts) < 2:
        return None
    fields: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.strip(" .…").partition(": ")
        if not sep or not _FRAGMENT_VALUE_RE.fullmatch(value.strip()) or len(key) > 40:
            return None
        fields[key.strip()] = value.strip()
    if not any(k in fields for k in _FRAGMENT_KEYS):
        return None
    return _decode(n, ctx, fields, None)


def make_prefill(n: int, ctx: LineContext, m: re.Match[str]) -> PrefillSample:
    fields = split_fields(m.group("body"))
    return PrefillSample(
        line=n,
        ctx=ctx,
        new_seq=_int(fields.get("#new-seq")),
        new_token=_int(fields.get("#new-token")),
        cached_token=_int(fields.get("#cached-token")),
        running_req=_int(fields.get("#running-req")),
        queue_req=_int(fields.get("#queue-req")),
        token_usage=_float(_first(fields, _USAGE_KEYS)),
        input_tokens_per_s=_float(fields.get("input throughput (token/s)")),
        fields=fields,
    )


_SERVER_ARGS_RE = re.compile(r"server_args=(?=ServerArgs\(|\{)")
_WEIGHT_END_RE = re.compile(r"Load weight end\. (?:elapsed=(?P<elapsed>[0-9.]+) s, )?type=(?P<type>[\w.]+)")
_DRAFT_ARCH_RE = re.compile(r"Eagle|EAGLE|NextN|MTP|Draft|Medusa|Assistant")
_KV_RE = re.compile(r"KV Cache is allocated\. (?:dtype: (?P<dtype>[^,]+), )?#tokens: (?P<tokens>\d+)")
_CAPTURE_RE = re.compile(r"Capture (?P<what>[\w\- ]*?)graph (?P<phase>begin|end)\b", re.IGNORECASE)
_KV_PAIR_RE = re.compile(r"(\w+)=(-?\d+(?:\.\d+)?)")
_MEM_RE = re.compile(r"(avail mem|mem usage)=([0-9.]+) GB")
_URL_RE = re.compile(r"Uvicorn running on (\S+)")
# Logged by the custom all-reduce when a graph runner leaves its capture context, i.e. inside capture
# (before "Capture cuda graph end"): https://github.com/sgl-project/sglang/pull/14280
_REGISTER_RE = re.compile(r"Registering (?P<n>\d+) cuda graph addresses")

# Cheap substring -> handler key; the first that is `in` the message is tried.
MILESTONE_HINTS: tuple[str, ...] = (
    "server_args=", "Load weight", "KV Cache is allocated", "Memory pool end", "raph ",
    "max_total_num_tokens=", "Uvicorn running on", "fired up and ready to roll", "Init torch distributed begin",
    "Shutting down", "Finished server process", "SIGTERM received",
)


def _mem(msg: str) -> dict[str, object]:
    return {k.replace(" ", "_"): float(v) for k, v in _MEM_RE.findall(msg)}


def make_milestone(n: int, ctx: LineContext, msg: str) -> Milestone | None:
    """`weights_seen` decisions (target vs draft) are made by the caller; this returns WEIGHTS_LOADED."""
    kind: MilestoneKind | None = None
    detail: dict[str, object] = {}
    if "server_args=" in msg:
        m = _SERVER_ARGS_RE.search(msg)
        if m is not None:
            parsed = parse_server_args(msg[m.end() :])
            if parsed is not None:
                kind, detail = MilestoneKind.SERVER_ARGS, parsed
    elif "Load weight begin" in msg:
        kind, detail = MilestoneKind.WEIGHTS_BEGIN, _mem(msg)
    elif "Load weight end" in msg:
        m = _WEIGHT_END_RE.search(msg)
        kind, detail = MilestoneKind.WEIGHTS_LOADED, _mem(msg)
        if m is not None:
            detail["type"] = m.group("type")
            if m.group("elapsed"):
                detail["elapsed_s"] = float(m.group("elapsed"))
            if _DRAFT_ARCH_RE.search(m.group("type")):
                kind = MilestoneKind.DRAFT_WEIGHTS_LOADED
    elif "KV Cache is allocated" in msg:
        kind = MilestoneKind.KV_ALLOCATED
        m = _KV_RE.search(msg)
        if m is not None:
            detail = {"tokens": int(m.group("tokens"))}
            if m.group("dtype"):
                detail["dtype"] = m.group("dtype").strip()
    elif "Memory pool end" in msg:
        kind, detail = MilestoneKind.MEMORY_POOL_END, _mem(msg)
    elif "max_total_num_tokens=" in msg:
        kind = MilestoneKind.CAPACITY
        for k, v in _KV_PAIR_RE.findall(msg):
            detail[k] = float(v) if "." in v else int(v)
    elif "Uvicorn running on" in msg:
        m = _URL_RE.search(msg)
        kind, detail = MilestoneKind.UVICORN_UP, ({"url": m.group(1)} if m else {})
    elif "fired up and ready to roll" in msg:
        kind = MilestoneKind.FIRED_UP
    elif "Init torch distributed begin" in msg:
        kind = MilestoneKind.DIST_INIT
    elif msg.startswith(("Shutting down", "Finished server process")):
        kind = MilestoneKind.SHUTDOWN
    elif msg.startswith("SIGTERM received"):  # "… Draining requests and shutting down..." (the launcher's handler)
        kind, detail = MilestoneKind.SHUTDOWN, {"signal": "SIGTERM"}
    elif "raph addresses" in msg:
        m = _REGISTER_RE.search(msg)
        if m is not None:  # capture is under way: the same stage as "Capture cuda graph begin"
            kind = MilestoneKind.GRAPH_CAPTURE_BEGIN
            detail = {"graph": "cuda", "registered_addresses": int(m.group("n"))}
    elif "raph " in msg and "apture" in msg:
        m = _CAPTURE_RE.search(msg)
        if m is not None:
            begin = m.group("phase").lower() == "begin"
            kind = MilestoneKind.GRAPH_CAPTURE_BEGIN if begin else MilestoneKind.GRAPH_CAPTURE_END
            detail = {"graph": m.group("what").strip()}
            detail.update(_mem(msg))
    if kind is None:
        return None
    return Milestone(line=n, ctx=ctx, kind=kind, text=msg, detail=detail)
