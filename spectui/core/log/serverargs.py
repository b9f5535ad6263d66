"""Parse SGLang's `server_args=ServerArgs(k=v, ...)` / `server_args={...}` log line into a dict, safely.

Both forms carry resolved values: `ServerArgs(...)` (<= 0.5.18) is printed after `__post_init__`, the dict
(0.5.19+) is `resolved_dict()` after `resolve_once`. Only 0.5.23's Python `Engine(...)` API logs one more
dict BEFORE resolution, with the parsed values: `prefer_server_args` keeps the resolved one.

The text is a Python repr. It is split at top-level commas by a small scanner that respects quotes and
brackets; each value goes through `ast.literal_eval` (literals only, never code) and is kept as its raw
text when it is not a literal (e.g. `device(type='cuda')`). A line cut short keeps every complete pair.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from spectui.core.secrets import secret_name

_MAX_REPR = 2_000_000  # a real server_args line is ~10 kB; refuse pathological ones
_KW_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*=")
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_top_level(text: str) -> tuple[list[str], bool]:
    """Split on commas at bracket depth 0. Returns (parts, complete) where complete means the text
    ended at depth 0 outside a string (i.e. the last part is whole)."""
    parts: list[str] = []
    depth: list[str] = []
    quote: str | None = None
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif c in "'\"":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            continue
        elif c in _OPEN:
            depth.append(_OPEN[c])
        elif c in ")]}":
            if depth and depth[-1] == c:
                depth.pop()
        elif c == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    complete = quote is None and not depth
    tail = text[start:]
    if tail.strip():
        parts.append(tail)
    return parts, complete


def _value(raw: str) -> object:
    raw = raw.strip()
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def parse_server_args(text: str) -> dict[str, object] | None:
    """`text` is what follows `server_args=`. Returns None when it is neither form. A secret field's value
    (`api_key='sk-…'`, `ssl_keyfile_password`, … as releases up to 0.5.18 log them in clear) is "***":
    nothing downstream (check, the cockpit, bundles, reports) ever holds it."""
    out = _parse_server_args(text)
    if out is not None:
        for key, value in out.items():
            if isinstance(value, str) and value and secret_name(key):
                out[key] = "***"
    return out


def _parse_server_args(text: str) -> dict[str, object] | None:
    text = text.strip()[:_MAX_REPR]
    if text.startswith("ServerArgs("):
        body = text[len("ServerArgs(") :]
        closed = body.endswith(")")
        if closed:
            body = body[:-1]
        parts, complete = _split_top_level(body)
        if not (closed and complete) and parts:
            parts = parts[:-1]  # cut short: the last pair may be partial
        out: dict[str, object] = {}
        for part in parts:
            m = _KW_RE.match(part)
            if m is not None:
                out[m.group(1)] = _value(part[m.end() :])
        return out
    if text.startswith("{"):
        try:
            whole = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            whole = None
        if isinstance(whole, dict):
            return {str(k): v for k, v in whole.items()}
        body = text[1:]
        closed = body.endswith("}")
        if closed:
            body = body[:-1]
        parts, complete = _split_top_level(body)
        if not (closed and complete) and parts:
            parts = parts[:-1]
        out = {}
        for part in parts:
            key, sep, value = part.partition(":")
            if sep:
                out[str(_value(key))] = _value(value)
        return out
    return None


# Fields SGLang's resolution always fills: still None means the line was logged before resolution (0.5.23's
# Python `Engine(...)` logs `server_args={...}` once in `Engine.__init__` with the parsed values, then again
# after `resolve_once` with the resolved ones). page_size is resolved from the attention backend in every
# release; the speculative ones whenever an algorithm is set.
_ALWAYS_RESOLVED = ("page_size",)
_SPEC_RESOLVED = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
                  "max_running_requests")


def unresolved_fields(args: Mapping[str, object]) -> list[str]:
    """Fields of a parsed `server_args=` line that resolution would have filled but are still None."""
    names = [k for k in _ALWAYS_RESOLVED if k in args]
    if args.get("speculative_algorithm") not in (None, "", "None"):
        names += [k for k in _SPEC_RESOLVED if k in args]
    return [k for k in names if args.get(k) is None]


def looks_resolved(args: Mapping[str, object]) -> bool:
    """True when the line carries resolved values (what the server runs with)."""
    return not unresolved_fields(args)


def prefer_server_args(old: Mapping[str, object] | None, new: Mapping[str, object]) -> Mapping[str, object]:
    """Two `server_args=` lines of one launch, in log order: the resolved one wins whichever comes first;
    when both look alike, the later one (SGLang logs the resolved values last)."""
    if old is None:
        return new
    if looks_resolved(old) and not looks_resolved(new):
        return old
    return new
