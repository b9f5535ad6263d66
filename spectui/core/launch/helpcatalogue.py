"""A flag catalogue read from a host's `python -m sglang.launch_server --help` output (the last resort when
the host's SGLang cannot be imported to dump its parser: data/dump_flags.py)."""

from __future__ import annotations

import re

from spectui.core.launch.catalogue import FlagCatalogue, FlagSpec

_METAVAR = r"(?: (?:[A-Z][A-Z0-9_]*|\{[^}\s]*\})(?: \[[A-Z][A-Z0-9_]* \.\.\.\])?)?"
_HELP_OPT = re.compile(rf"^\s{{0,8}}(-[-\w]+{_METAVAR}(?:, -[-\w]+{_METAVAR})*)")
_CHOICES = re.compile(r"^\{([^}]*)\}")


def catalogue_from_help(text: str, version: str) -> FlagCatalogue:
    """A catalogue read from a host's `python -m sglang.launch_server --help` output.

    Help output lacks types and defaults, so values are kept as strings; flags, aliases, whether a flag
    takes a value, nargs="+" and choices are recovered, which is what prefix matching and
    "unrecognized arguments" need.
    """
    specs: list[FlagSpec] = []
    seen: set[str] = set()
    for line in text.splitlines():
        m = _HELP_OPT.match(line)
        if not m or not line.lstrip().startswith("--"):
            continue
        flags: list[str] = []
        metavar: str | None = None
        plus = False
        for part in m.group(1).split(", "):
            bits = part.split()
            if bits and bits[0].startswith("--"):
                flags.append(bits[0])
                if len(bits) > 1:
                    metavar = bits[1]
                    plus = len(bits) > 2
        flags = [f for f in flags if f not in seen and f != "--help"]
        if not flags:
            continue
        seen.update(flags)
        nargs: int | str | None = 0 if metavar is None else ("+" if plus else None)
        choices = None
        if metavar is not None and (cm := _CHOICES.match(metavar)):
            choices = tuple(cm.group(1).split(","))
        action = "_StoreTrueAction" if nargs == 0 else "_StoreAction"
        if nargs == 0 and any(f.startswith("--no-") for f in flags[1:]):
            action = "BooleanOptionalAction"
        dest = flags[0][2:].replace("-", "_")
        specs.append(FlagSpec(tuple(flags), dest, action, None if nargs == 0 else "str", nargs,
                              False if nargs == 0 else None, choices))
    if not specs:
        raise ValueError("no flags found in that --help output")
    return FlagCatalogue(version, specs)
