"""SGLang release numbers as comparable tuples: "0.5.4.post3" -> (0, 5, 4, 3)."""

from __future__ import annotations

import re

Version = tuple[int, int, int, int]

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+))?$")


def parse_version(text: str) -> Version:
    """(major, minor, patch, post). Raises ValueError for anything that is not a release number."""
    m = _VERSION.match(text.strip())
    if not m:
        raise ValueError(f"not an SGLang release number: {text!r}")
    major, minor, patch, post = m.groups()
    return int(major), int(minor), int(patch or 0), int(post or 0)


def v(text: str) -> Version:
    """Short form for rule tables: v("0.5.10")."""
    return parse_version(text)
