"""Guess the SGLang release from log-format clues (docs/REFERENCE.md §3.2, §3.3, §2.4 and §7 "Parsing notes").

Each clue narrows a release range. Strong clues are intersected; weak clues (formats whose boundary is
less certain) only narrow the range when they agree with the strong ones. Clues that contradict each
other (forks, patched builds) give no guess rather than a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

V = tuple[int, ...]
Range = tuple[V | None, V | None]


@dataclass(slots=True)
class VersionHints:
    """Format clues seen so far: clue name -> (first release, last release) it is consistent with."""

    strong: dict[str, Range] = field(default_factory=dict)
    weak: dict[str, Range] = field(default_factory=dict)

    def add(self, clue: str, lo: V | None, hi: V | None, *, weak: bool = False) -> None:
        target = self.weak if weak else self.strong
        if clue not in target:
            target[clue] = (lo, hi)

    def __bool__(self) -> bool:
        return bool(self.strong or self.weak)


def _fmt(v: V) -> str:
    return ".".join(str(p) for p in v)


def _intersect(ranges: list[Range], start: Range = (None, None)) -> Range | None:
    lo, hi = start
    for r_lo, r_hi in ranges:
        if r_lo is not None and (lo is None or r_lo > lo):
            lo = r_lo
        if r_hi is not None and (hi is None or r_hi < hi):
            hi = r_hi
    if lo is not None and hi is not None and lo > hi:
        return None
    return lo, hi


def version_range(hints: VersionHints) -> Range | None:
    """The release range every clue agrees with; None when nothing is known or the clues conflict."""
    if not hints:
        return None
    rng = _intersect(list(hints.strong.values()))
    if rng is None:
        return None
    for weak in hints.weak.values():
        narrowed = _intersect([weak], rng)
        if narrowed is not None:
            rng = narrowed
    if rng == (None, None):
        return None
    return rng


def guess_version(hints: VersionHints) -> str | None:
    """"0.5.4" (one release), "<=0.5.3", ">=0.5.20", ">=0.5.5,<=0.5.8" (pip-style range), or None."""
    rng = version_range(hints)
    if rng is None:
        return None
    lo, hi = rng
    if lo is not None and hi is not None:
        return _fmt(lo) if lo == hi else f">={_fmt(lo)},<={_fmt(hi)}"
    if lo is not None:
        return f">={_fmt(lo)}"
    assert hi is not None
    return f"<={_fmt(hi)}"
