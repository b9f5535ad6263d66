"""Everything the checks look at, gathered once by `inspect`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spectui.core.draft.checkpoint import Checkpoint
from spectui.core.draft.formats import FormatInfo, Layout, arch_of, cfg
from spectui.core.draft.releases import Eagle3Loader


@dataclass
class Launch:
    """The launch settings that matter to the draft (SGLang dest names, values as resolved)."""

    algorithm: str | None = None  # upper-cased; NEXTN is SGLang's alias of EAGLE
    steps: int | None = None
    topk: int | None = None
    draft_tokens: int | None = None
    max_prompt_len: int | None = None  # longest prompt seen (from logs or a benchmark), optional

    @property
    def eagle_family(self) -> str | None:
        """"EAGLE3", "EAGLE" (EAGLE and its alias NEXTN), another algorithm's name, or None."""
        if self.algorithm is None:
            return None
        return "EAGLE" if self.algorithm == "NEXTN" else self.algorithm


@dataclass
class Context:
    draft: Checkpoint | None
    target: Checkpoint | None
    fmt: FormatInfo
    layout: Layout
    loader: Eagle3Loader
    launch: Launch
    d2t: list[int] | None = None
    t2d: list[int] | None = None
    tensor_notes: list[str] = field(default_factory=list)  # why d2t/t2d values were not checked

    @property
    def dconfig(self) -> dict[str, Any]:
        return self.draft.config if self.draft else {}

    @property
    def tconfig(self) -> dict[str, Any] | None:
        return self.target.config if self.target else None

    def d(self, key: str) -> Any:
        return cfg(self.dconfig, key)

    def t(self, key: str) -> Any:
        return cfg(self.tconfig, key)

    def dint(self, key: str) -> int | None:
        v = self.d(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def tint(self, key: str) -> int | None:
        v = self.t(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def draft_archs(self) -> list[str]:
        return arch_of(self.dconfig)

    @property
    def target_archs(self) -> list[str]:
        return arch_of(self.tconfig) if self.tconfig else []

    def where(self, name: str) -> str:
        """'file: checkpoint-name' for a normalised tensor name."""
        ref = self.layout.names.get(name)
        orig = self.layout.original.get(name, name)
        return f"{ref.file}: {orig}" if ref else orig

    def shape_ev(self, name: str) -> str:
        shape = self.layout.shape(name)
        return f"{self.where(name)} shape {list(shape)}" if shape is not None else f"{self.where(name)}"
