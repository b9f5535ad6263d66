"""Per-request speculative-decoding fields an SGLang response may carry, under every release's names.

Where they come from (docs/REFERENCE.md §4.4): `meta_info` (native /generate, and `choices[i].meta_info` on some
OpenAI builds) and, on the OpenAI endpoints of recent releases, `sglext.spec_tokens_details` (asked for with
`"return_spec_tokens_details": true`; streamed as its own chunk with `choices: []`).

Names by release:
  ≤0.5.3           spec_verify_ct
  0.5.4 – 0.5.5    + spec_accept_rate, spec_accept_length
  0.5.6 – 0.5.10   + spec_accept_token_num, spec_draft_token_num (0.5.10: + spec_accept_histogram)
  0.5.11           spec_accepted_drafts, spec_proposed_drafts (names seen in public client code that reads
                   all three generations; not in docs/REFERENCE.md, which skips 0.5.11)
  ≥0.5.12          spec_num_correct_drafts, spec_num_proposed_drafts, spec_correct_drafts_histogram
Every raw `spec_*` key is kept as received. The normalised view is None for anything not received: a
missing name never turns into 0 or 1.0. One exception, documented: SGLang's `SpecTokensDetails` fills
absent fields with 0 / 0.0 / [], so in an `sglext` block a `spec_verify_ct` of 0 means "no data" and the
normalised counters and ratios are None (the raw values stay).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# normalised name -> raw names, newest release first
ACCEPTED_NAMES = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
PROPOSED_NAMES = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
HISTOGRAM_NAMES = ("spec_correct_drafts_histogram", "spec_accept_histogram", "spec_acceptance_histogram")
EXTRA_KEYS = ("speculative_decoding_stats",)  # SGLang PR #34814 (detailed stats), kept raw


@dataclass
class SpecFields:
    """What one request's response said about speculation. `raw` holds every spec key as received."""

    raw: dict[str, Any] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)  # "sglext", "meta_info"

    def update(self, block: object, source: str) -> None:
        if not isinstance(block, dict):
            return
        found = False
        for key, value in block.items():
            if key.startswith("spec_") or key in EXTRA_KEYS:
                self.raw[key] = value
                found = True
        if found:
            self.sources.add(source)

    def __bool__(self) -> bool:
        return bool(self.raw)

    def _int(self, *names: str) -> tuple[int | None, str | None]:
        for name in names:
            value = self.raw.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value, name
            if isinstance(value, float) and value.is_integer():
                return int(value), name
        return None, None

    def _float(self, name: str) -> float | None:
        value = self.raw.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return None

    @property
    def _filler(self) -> bool:
        """An sglext block without a verify count is SGLang's zero-filled default: no evidence."""
        return self.sources == {"sglext"} and not self._int("spec_verify_ct")[0]

    @property
    def verify_ct(self) -> int | None:
        """Verify rounds (forward passes of the target) this request took."""
        value = self._int("spec_verify_ct")[0]
        return None if self._filler else value

    @property
    def accepted_drafts(self) -> int | None:
        return None if self._filler else self._int(*ACCEPTED_NAMES)[0]

    @property
    def proposed_drafts(self) -> int | None:
        return None if self._filler else self._int(*PROPOSED_NAMES)[0]

    @property
    def accept_length(self) -> float | None:
        """The server's own per-request accept length (completion tokens / verify rounds)."""
        return None if self._filler else self._float("spec_accept_length")

    @property
    def accept_rate(self) -> float | None:
        return None if self._filler else self._float("spec_accept_rate")

    @property
    def histogram(self) -> list[int] | None:
        if self._filler:
            return None
        for name in HISTOGRAM_NAMES:
            value = self.raw.get(name)
            if isinstance(value, list) and value and all(isinstance(x, int | float) for x in value):
                return [int(x) for x in value]
        return None

    @property
    def names(self) -> dict[str, str]:
        """Which raw name each normalised counter was read from (tells the release generation)."""
        out = {}
        for label, names in (("accepted_drafts", ACCEPTED_NAMES), ("proposed_drafts", PROPOSED_NAMES)):
            name = self._int(*names)[1]
            if name:
                out[label] = name
        return out

    def accept_length_from(self, output_tokens: int | None) -> float | None:
        """output tokens / verify rounds, from the counters (None when either is unknown)."""
        ct = self.verify_ct
        if not output_tokens or not ct:
            return None
        return output_tokens / ct

    def to_json(self) -> dict[str, Any]:
        return {"verify_ct": self.verify_ct, "accepted_drafts": self.accepted_drafts,
                "proposed_drafts": self.proposed_drafts, "accept_length": self.accept_length,
                "accept_rate": self.accept_rate, "histogram": self.histogram, "names": self.names,
                "sources": sorted(self.sources), "raw": dict(self.raw)}


def collect(spec: SpecFields, event: dict[str, Any]) -> None:
    """Fold the spec fields of one response object (a stream chunk or a whole body) into `spec`."""
    ext = event.get("sglext")
    if isinstance(ext, dict):
        spec.update(ext.get("spec_tokens_details"), "sglext")
        if "speculative_decoding_stats" in ext:
            spec.update({"speculative_decoding_stats": ext["speculative_decoding_stats"]}, "sglext")
    spec.update(event.get("meta_info"), "meta_info")
    choices = event.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict):
                spec.update(choice.get("meta_info"), "meta_info")
