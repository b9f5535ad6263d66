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


@dataclass(frozen=True, slots=True)
class Override:
    """A value asked on the command line that SGLang replaces while resolving (`asked` != `effective`): why,
    and the flags that get what was asked (`fix_set` / `fix_unset`, dashes included). `label` is the
    short name screens use ("draft tokens")."""

    flag: str  # "--speculative-num-draft-tokens"
    field: str  # ServerArgs field: "speculative_num_draft_tokens"
    asked: object
    effective: object
    why: str  # "topk 1 makes it steps + 1"
    fix: str  # plain words: "--speculative-num-steps 5 (a chain of 6 draft tokens), or a topk > 1 for a tree"
    fix_set: tuple[tuple[str, str], ...] = ()
    fix_unset: tuple[str, ...] = ()
    label: str = ""

    def sentence(self) -> str:
        """`draft tokens: asked 6, SGLang will use 2, because topk 1 makes it steps + 1`."""
        return f"{self.label or self.flag}: asked {_show(self.asked)}, SGLang will use {_show(self.effective)}, " \
               f"because {self.why}"

    def to_json(self) -> dict[str, object]:
        fix = {"set": dict(self.fix_set), "unset": list(self.fix_unset)} if (self.fix_set or self.fix_unset) else None
        return {"flag": self.flag, "asked": self.asked, "effective": self.effective, "why": self.why,
                "fix": fix, "fix_text": self.fix}


def _show(value: object) -> str:
    if value is True:
        return "on"
    if value is False or value is None:
        return "off" if value is False else "unset"
    return str(value)
