"""Text from a log or a host, made safe for a terminal: the one cleaner every human view and the UI use.

Log text is data. Whatever bytes a server (or an attacker) writes, a screen must only ever show those bytes
as text: escape sequences are removed (never interpreted) — CSI, OSC, DCS/SOS/PM/APC, in their 7-bit
(ESC-introduced) and 8-bit (C1) forms — then C0 and C1 controls, DEL, NUL, bidi embeddings/overrides/
isolates and the BOM are dropped, tabs are expanded and an over-long line is cut with a note of what was
not shown. The original stays in the log file; this is the display copy.

`json_text` is the JSON side of the same rule: every string stays whole (JSON is lossless), but no raw
escape, C1 control, bidi mark or lone surrogate reaches a pipe or a terminal: they are written \\uXXXX.

`strip_escapes` is the first half alone (the parser uses it so that a coloured or hyperlinked line reads
like a plain one: an OSC hyperlink on an exception line must not split a traceback in two).
"""

from __future__ import annotations

import json
import re
from typing import Any

DISPLAY_CAP = 2000  # characters kept for display; the rest is summarised in a suffix

# 7-bit: CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC (ESC P|X|^|_ ...
# ST), any other two-character escape (ESC + one byte from @ to _ or a charset designator), a lone ESC.
# 8-bit: the same introducers as single C1 code points (CSI 0x9b, OSC 0x9d, DCS 0x90, SOS 0x98, PM 0x9e,
# APC 0x9f), terminated by BEL or ST (ESC \ or 0x9c). An unterminated string runs to the end of the line,
# as a terminal would swallow it.
_ESCAPES = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]?"
    "|\x1b\\][^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
    "|\x1b[ -/]*[0-~]?"
    "|\x9b[0-?]*[ -/]*[@-~]?"
    "|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|[\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
)
_HAS_ESCAPE = re.compile("[\x1b\x90\x98\x9b\x9d\x9e\x9f]")
# C0 controls (tab handled apart), DEL, C1 controls, bidi marks (LRM, RLM, ALM) and embedding/override/
# isolate controls, line/paragraph separators, zero-width and invisible operators, interlinear annotation
# marks, the BOM / zero-width no-break space, and lone surrogates (undecodable bytes kept by
# surrogateescape, which no terminal can print): each changes what *other* text looks like, or crashes
# the writer.
_UNSAFE = ("\x7f-\x9f\u061c\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
           "\ufeff\ufff9-\ufffb\ud800-\udfff")
_CONTROLS = re.compile(f"[\x00-\x08\x0a-\x1f{_UNSAFE}]")
# Inside a JSON text such characters can only stand in strings (JSON's own whitespace is ASCII), and
# json.dumps already escapes C0: what is left is escaped as \uXXXX, which loses nothing.
_JSON_UNSAFE = re.compile(f"[{_UNSAFE}]")


def strip_escapes(text: str) -> str:
    """`text` without terminal escape sequences (every other character kept)."""
    if "\x1b" not in text and (text.isascii() or not _HAS_ESCAPE.search(text)):
        return text
    return _ESCAPES.sub("", text)


def terminal_safe(text: str, cap: int | None = DISPLAY_CAP, *, tabs: int = 4) -> str:
    """The display form of `text`: plain printable text, at most about `cap` characters (None: no cap)."""
    text = strip_escapes(text)
    suffix = ""
    if cap is not None and len(text) > cap:
        suffix = f" … [+{len(text) - cap:,} chars not shown]"
        text = text[:cap]
    text = _CONTROLS.sub("", text)
    if "\t" in text:
        text = text.expandtabs(tabs)
    return text + suffix


def terminal_safe_short(text: str, limit: int) -> str:
    """`terminal_safe` for a table cell: one line of at most `limit` characters, cut with an ellipsis."""
    safe = terminal_safe(text, None)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def json_text(obj: Any, **kwargs: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False, **kwargs)` made safe for a terminal: DEL, C1 controls (U+009B
    is CSI), bidi and invisible marks and lone surrogates are escaped as \\uXXXX (C0 and ESC json.dumps
    escapes itself). `json.loads` gives back exactly `obj`."""
    text = json.dumps(obj, ensure_ascii=False, **kwargs)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
