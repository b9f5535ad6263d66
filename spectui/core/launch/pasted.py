"""Launch commands as users paste them: often the flags alone (`--speculative-algorithm EAGLE3 …`, copied
from an issue or a README), without the program. parse_pasted() assumes `python -m sglang.launch_server`
for those and says so; anything else is parse_command's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spectui.core.launch.command import LaunchCommand, parse_command
from spectui.errors import CommandParseError

ASSUMED_PROGRAM = ("python", "-m", "sglang.launch_server")
ASSUMED_NOTE = ("no program in the command, only flags: assuming `python -m sglang.launch_server` "
                "(the flags are judged as its arguments)")

_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Leading blank lines, `#` comment lines and VAR=value words, then the first flag.
_TEXT_FLAGS = re.compile(r"\A(?P<head>(?:\s*#[^\n]*\n)*\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)(?=--?[A-Za-z])")


def parse_pasted(text: str | Sequence[str]) -> tuple[LaunchCommand, str | None]:
    """(command, note): `note` says what was assumed, None when the text was a whole command.

    Raises errors.CommandParseError like parse_command when it is neither."""
    try:
        return parse_command(text), None
    except CommandParseError as first:
        if not isinstance(text, str) and len(text) == 1:
            text = text[0]  # one quoted word: the whole command as a string
        if isinstance(text, str):
            m = _TEXT_FLAGS.match(text)
            if m is None:
                raise
            fixed: str | list[str] = f"{m.group('head')}{' '.join(ASSUMED_PROGRAM)} {text[m.end('head'):]}"
        else:
            words = list(text)
            i = 0
            while i < len(words) and _ENV_WORD.match(words[i]):
                i += 1
            if i >= len(words) or not words[i].startswith("-") or words[i] in ("-", "--"):
                raise
            fixed = [*words[:i], *ASSUMED_PROGRAM, *words[i:]]
        try:
            return parse_command(fixed), ASSUMED_NOTE
        except CommandParseError:
            raise first from None
