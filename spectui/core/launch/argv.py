"""Reading one option's value from an argv the way SGLang's argparse does: the one reader.

SGLang's `ServerArgs.add_cli_args` builds a plain `argparse.ArgumentParser` (no short options, no
negative-number-like option strings), so what argparse does decides:

- a repeated option: the LAST occurrence wins (`store` overwrites the attribute);
- `--flag=V` takes V whatever it is (`--api-key=--x` gives `--x`, `--x=` gives "");
- `--flag V` takes V only when argparse would not read V as an option itself: a word starting with `-`
  is an option unless it is `-` alone, a negative number (`-1`, `-0.5`) or contains a space
  (argparse's `_parse_optional`); `--flag --other` is argparse's "expected one argument" error;
- a bare `--` ends the options: what follows is positional.

Option prefixes (`--model` for `--model-path` by abbreviation) are argparse's business with the whole
catalogue: give every spelling the caller accepts (`flag_value(argv, "--model-path", "--model")`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spectui.core.launch.command import LaunchCommand

# argparse's own `_negative_number_matcher`.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def takes_as_value(word: str) -> bool:
    """Whether argparse reads `word`, after an option that takes one value, as that value."""
    if not word.startswith("-") or word == "-":
        return True
    return bool(_NEGATIVE_NUMBER.match(word)) or " " in word


def flag_value(argv: Sequence[str], *names: str) -> str | None:
    """The value argparse gives the option spelled `names` (aliases of one option) in `argv`: the last
    occurrence's, `--name=V` or `--name V`. None when the option is absent, or when its last occurrence
    has no value argparse would take (the command would fail: "expected one argument")."""
    if not names:
        raise ValueError("flag_value needs at least one option name")
    value: str | None = None
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            break
        head, eq, tail = word.partition("=")
        if eq and head in names:
            value = tail
        elif word in names:
            if i + 1 < len(argv) and takes_as_value(argv[i + 1]):
                value = argv[i + 1]
                i += 1
            else:
                value = None
        i += 1
    return value


def resolvable_args(cmd: LaunchCommand) -> tuple[str, ...]:
    """The args SGLang's argparse sees: `cmd.sglang_args` (the simulator's `--sim-*` knobs left out)."""
    return cmd.sglang_args
