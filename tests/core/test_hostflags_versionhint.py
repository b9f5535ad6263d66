"""A resolution warning in Python logging's default form ("WARNING:sglang.srt.server_args:…", an embedding
program called logging.basicConfig first) says nothing about the release: no "bare line, so <=0.5.10" clue."""

from __future__ import annotations

from spectui.core.log import LogParser, guess_version

WARN = "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly " \
       "setting --max-running-requests."
PROG = "sglang serve: error: unrecognized arguments: --nope"  # an argparse line of a >=0.5.10 release


def _hints(*lines: str) -> LogParser:
    parser = LogParser()
    parser.feed_bytes("".join(f"{ln}\n" for ln in lines).encode())
    parser.finish()
    return parser


def test_logging_default_form_gives_no_bare_line_hint() -> None:
    parser = _hints(f"WARNING:sglang.srt.server_args:{WARN}")
    assert "resolution_warning_bare" not in parser.version_hints.strong
    assert "resolution_warning_prefixed" not in parser.version_hints.weak
    assert any(k.startswith("text:Max running requests is reset") for k in parser.version_hints.strong)
    # With a >=0.5.10 clue the guess stays a range from 0.5.10 on (the bare clue would have contradicted it).
    guess = guess_version(_hints(PROG, f"WARNING:sglang.srt.server_args:{WARN}").version_hints)
    assert guess is not None and guess.startswith(">=0.5.10")


def test_a_truly_bare_line_still_means_at_most_0_5_10() -> None:
    parser = _hints(WARN)
    assert parser.version_hints.strong["resolution_warning_bare"] == (None, (0, 5, 10))
