"""One requested-vs-effective difference, explained (made by core.launch.explain, held by a Resolution)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class FlagNote:
    """One requested-vs-effective difference (or risk), explained; `fix` flags carry their dashes."""

    code: str
    severity: Literal["error", "warning", "info"]
    title: str
    explanation: str
    fix_set: tuple[tuple[str, str], ...] = ()
    fix_unset: tuple[str, ...] = ()
