"""What `spectui inspect` reports: findings in the contract's vocabulary (../shared/CONTRACTS.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CATEGORIES = (
    "draft-architecture",
    "draft-format",
    "draft-algorithm",
    "draft-weights",
    "draft-hidden-size",
    "draft-vocab-map",
    "draft-aux-layers",
    "draft-context-length",
    "draft-config",
    "draft-missing",
)
SEVERITIES = ("error", "warning", "info")
FORMATS = ("sglang-eagle3", "eagle", "speculators", "mtp", "unknown")


@dataclass(frozen=True)
class Finding:
    """One problem (or noteworthy fact) about a draft checkpoint.

    `code` is a stable id for tests and suppression (an addition to the contract's fields).
    `evidence` holds "file key = value" strings a user can check by hand.
    """

    code: str
    category: str
    severity: str
    title: str
    evidence: list[str] = field(default_factory=list)
    fix: str = ""

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown finding category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown finding severity {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "category": self.category,
            "severity": self.severity,
            "title": self.title,
            "evidence": list(self.evidence),
            "fix": self.fix,
        }


def short(value: Any, limit: int = 120) -> str:
    """A value as evidence text, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
