"""Parse SGLang's `server_args=ServerArgs(k=v, ...)` / `server_args={...}` log line into a dict, safely.

The text is a Python repr. It is split at top-level commas by a small scanner that respects quotes and
brackets; each value goes through `ast.literal_eval` (literals only, never code) and is kept as its raw
text when it is not a literal (e.g. `device(type='cuda')`). A line cut short keeps every complete pair.
"""

from __future__ import annotations

import ast
import re

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
    """`text` is what follows `server_args=`. Returns None when it is neither form."""
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
