"""core.text: one cleaner for all terminal text (every escape form, controls, bidi, NUL, long lines)."""

from __future__ import annotations

import pytest

from spectui.core.log import ErrorEvent, LogParser
from spectui.core.text import json_text, strip_escapes, terminal_safe, terminal_safe_short

CASES = [
    ("\x1b[31mred\x1b[0m", "red"),                       # CSI SGR
    ("a\x1b[2Jb", "ab"),                                 # CSI erase
    ("a\x1b]0;title\x07b", "ab"),                        # OSC ended by BEL
    ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8 hyperlink ended by ST
    ("a\x1bP1;2|secret\x1b\\b", "ab"),                   # DCS ... ST
    ("a\x1b_apc\x1b\\b", "ab"),                          # APC
    ("a\x9b31mb", "ab"),                                 # 8-bit CSI
    ("a\x9d0;pwned\x07b", "ab"),                         # 8-bit OSC
    ("a\x90dcs\x9cb", "ab"),                             # 8-bit DCS ... 8-bit ST
    ("a\x1b7b\x1b8c", "abc"),                            # two-character escapes (save/restore cursor)
    ("nul\x00 bell\x07 cr\rback", "nul bell crback"),      # C0 controls
    ("del\x7f c1\x85x", "del c1x"),                      # DEL, C1 NEL
    ("\u202eevil\u202c \u2066iso\u2069 \ufeffbom", "evil iso bom"),  # bidi overrides, isolates, BOM
    ("a\u061cb\u200bc\u2028d\u2029e\u2060f", "abcdef"),  # ALM, zero-width space, line/paragraph separators
    ("bad \udcff\udc80 bytes", "bad  bytes"),  # lone surrogates (surrogateescape): unprintable, dropped
]


@pytest.mark.parametrize(("raw", "shown"), CASES)
def test_terminal_safe_drops_every_escape_and_control(raw: str, shown: str) -> None:
    assert terminal_safe(raw) == shown


def test_plain_text_is_returned_unchanged() -> None:
    line = "[2025-01-01 10:00:00] Decode batch, accept len: 1.60 — ünïcode stays"
    assert strip_escapes(line) is line
    assert terminal_safe(line) == line


def test_tabs_expand_and_long_lines_are_cut_with_a_note() -> None:
    assert terminal_safe("a\tb") == "a   b"
    out = terminal_safe("x" * 2500)
    assert out.startswith("x" * 2000) and out.endswith(" … [+500 chars not shown]")
    assert terminal_safe("x" * 2500, None) == "x" * 2500
    assert terminal_safe_short("abcdefghij", 5) == "abcd…"


def test_an_osc_on_the_exception_line_keeps_the_traceback_one_error() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/scheduler.py", line 10, in run',
        "    foo()",
        "RuntimeError: boom \x1b]8;;http://evil\x07link\x1b]8;;\x07 end",
        "[2025-01-01 10:00:01] Decode batch. #running-req: 1, #token: 10, token usage: 0.01, "
        "accept len: 1.50, gen throughput (token/s): 50.00, #queue-req: 0",
    ]
    parser = LogParser()
    records = parser.feed(lines) + parser.finish()
    errors = [r for r in records if isinstance(r, ErrorEvent)]
    assert len(errors) == 1
    assert errors[0].line == 1 and "boom link end" in errors[0].message


def test_a_coloured_line_inside_a_traceback_still_starts_a_record() -> None:
    lines = ["Traceback (most recent call last):", '  File "/x.py", line 1, in f',
             "ValueError: x", "\x1b[1;33mThe argument --enable-beta-spec is deprecated.\x1b[0m"]
    parser = LogParser()
    records = parser.feed(lines) + parser.finish()
    assert sum(isinstance(r, ErrorEvent) for r in records) == 1
    assert len(records) == 2


def test_json_text_escapes_what_a_terminal_would_act_on_and_loses_nothing() -> None:
    import json

    obj = {"label": "\x9b2J\x1b]52;c;eA==\x07\u202e\udcff", "ok": "ünïcode 日本"}
    text = json_text(obj)
    assert "\\u009b" in text and "\\u202e" in text and "\\udcff" in text and "ünïcode 日本" in text
    assert not any(0x7F <= ord(c) <= 0x9F or c in "\x1b\u202e" for c in text)
    assert json.loads(text) == obj
