"""Make one log line safe to show: no escape sequences, no control characters, bounded length.

Log text is data. Whatever bytes a server (or an attacker) writes, the screen must only ever show
those bytes as text: ANSI/OSC escapes are removed (not interpreted), C0/C1 controls and bidi
overrides are dropped, tabs are expanded, and a display cap keeps a 1 MB line from costing 1 MB of
render work per frame. The original stays in the log file on the host; this is the display copy.
"""

from __future__ import annotations

import re

DISPLAY_CAP = 2000  # characters kept for display; the rest is summarised in a suffix

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), and two-character escapes (ESC + one byte).
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_]|)")
# C0 controls (tab handled separately), DEL, C1 controls, bidi embedding/override/isolate marks,
# and the BOM / zero-width no-break space: all of them change what *other* text looks like.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def sanitize(line: str, cap: int = DISPLAY_CAP) -> str:
    """The display form of `line`: plain printable text, at most about `cap` characters."""
    if "\x1b" in line:
        line = _ESCAPES.sub("", line)
    if len(line) > cap:
        extra = len(line) - cap
        line = line[:cap]
        suffix = f" … [+{extra:,} chars not shown]"
    else:
        suffix = ""
    line = _CONTROLS.sub("", line)
    if "\t" in line:
        line = line.expandtabs(4)
    return line + suffix
