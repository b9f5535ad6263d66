"""SGLang release numbers as comparable tuples: "0.5.4.post3" -> (0, 5, 4, 3)."""

from __future__ import annotations

import re
from functools import lru_cache

Version = tuple[int, int, int, int]

# PEP 440 as SGLang builds report it: "0.5.6.post2", "v0.5.10", "0.5.19.dev410+gedff717ef" (a source
# checkout, what `sglang.__version__` and /server_info say), "0.5.5rc1".
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+))?(?:\.?(?:a|b|rc)\d+)?(\.?dev\d*)?(?:\+[\w.]+)?$")
_PRE = re.compile(r"(?:\.?(?:a|b|rc)\d+|\.?dev\d*)(?:\+[\w.]+)?$")


@lru_cache(maxsize=512)  # the resolver asks ~15 times a launch for the same few releases
def parse_version(text: str) -> Version:
    """(major, minor, patch, post). A pre-release or dev build of X sorts just below X (post = -1): its code
    is X's, minus what landed last. Raises ValueError for anything that is not a release number."""
    t = text.strip()
    m = _VERSION.match(t)
    if not m:
        raise ValueError(f"not an SGLang release number: {text!r}")
    major, minor, patch, post, _dev = m.groups()
    pre = post is None and _PRE.search(t) is not None
    return int(major), int(minor), int(patch or 0), -1 if pre else int(post or 0)


def v(text: str) -> Version:
    """Short form for rule tables: v("0.5.10")."""
    return parse_version(text)


def version_tuple(version: str) -> tuple[int, ...]:
    """Lenient (major, minor, patch) for ranges and formula switches: "0.5.4.post3" -> (0, 5, 4); never raises
    (a part without leading digits counts 0), so a guessed or odd version still compares."""
    out: list[int] = []
    for part in version.split(".")[:3]:
        digits = re.match(r"\d*", part)
        out.append(int(digits.group(0)) if digits and digits.group(0) else 0)
    return tuple(out)
