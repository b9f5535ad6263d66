"""SGLang's Prometheus metrics (docs/REFERENCE.md §4.3) folded into one record per scrape target.

A target (job, instance) exposes one series per stats-logging scheduler: TP0 of each DP rank, or every
scheduler with `--enable-metrics-for-all-schedulers`. Series that differ only in tp/pp/ep rank describe
the same batch, so they are averaged; distinct DP ranks (and models, engine types) are separate work, so
throughput and running/queued requests are summed over them and accept length / rate are averaged
weighted by each rank's throughput (docs/REFERENCE.md §7 parsing notes), plainly when no rank has throughput.

Names by release: `gen_throughput`, `num_running_reqs`, `num_queue_reqs`, `spec_accept_length` in every
release; `spec_accept_rate` from 0.5.4 (its formula changes, §3.2); `spec_num_steps` and
`spec_num_draft_tokens` from 0.5.15 (so the accept-length ceiling, steps + 1, is known only there). A
missing name gives null. SGLang registers `spec_accept_length` whether or not speculation is on and
reports 0 without it, so a value <= 0 means "no accept length" just as an absent series does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from spectui.fleet.prom import Sample

# record field -> the metric names that carry it, newest spelling first (the first one present is used)
METRIC_NAMES: dict[str, tuple[str, ...]] = {
    "gen_tokens_per_s": ("sglang:gen_throughput",),
    "running": ("sglang:num_running_reqs",),
    "queued": ("sglang:num_queue_reqs",),
    "accept_len": ("sglang:spec_accept_length",),
    "accept_rate": ("sglang:spec_accept_rate",),
    "steps": ("sglang:spec_num_steps",),
    "draft_tokens": ("sglang:spec_num_draft_tokens",),
}
ALL_NAMES: tuple[str, ...] = tuple(n for names in METRIC_NAMES.values() for n in names)
GEN_TOKENS_COUNTER = "sglang:generation_tokens_total"  # tokenizer side; rate() when gen_throughput is absent

# labels that only say which scheduler of one DP group reported (the same batch)
_SAME_BATCH_LABELS = frozenset({"__name__", "job", "instance", "tp_rank", "pp_rank", "moe_ep_rank",
                                "attn_tp_rank", "attn_cp_rank"})

Key = tuple[str, str]  # (job, instance)


@dataclass(slots=True)
class InstanceMetrics:
    """What Prometheus knows about one SGLang server: the record `fleet --json` prints and rules read."""

    job: str
    instance: str
    up: bool | None = None  # None: no `up` series (e.g. a federated or remote-written instance)
    scrape_error: str = ""
    accept_len: float | None = None
    accept_rate: float | None = None
    gen_tokens_per_s: float | None = None
    running: int | None = None
    queued: int | None = None
    queued_min: int | None = None  # smallest queue over the look-back window (a queue that never emptied)
    steps: int | None = None
    draft_tokens: int | None = None
    ranks: int = 0  # DP ranks (series groups) seen
    models: tuple[str, ...] = ()
    metric_names: frozenset[str] = frozenset()  # the sglang:* names this target exposes (of ALL_NAMES)
    gen_tokens_source: str | None = None  # "gauge" (gen_throughput) or "rate" (generation_tokens_total)
    baseline_tps: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.job, self.instance)

    @property
    def has_sglang_metrics(self) -> bool:
        return bool(self.metric_names) or self.gen_tokens_source is not None

    @property
    def speculative(self) -> bool:
        """Speculation is on: the active step count is exported (0.5.15+) or an accept length is."""
        return (self.steps is not None and self.steps > 0) or self.accept_len is not None

    @property
    def ceiling(self) -> int | None:
        """The most an accept length can be: steps + 1 (chain or tree), when the steps are known; NGRAM
        exports 0 steps (the real server: `spec_num_steps 0`, `spec_num_draft_tokens 4`) and verifies its
        draft tokens, so there it is the draft-token count (specdec.chain_depth)."""
        if self.steps:
            return self.steps + 1
        if self.steps == 0 and self.draft_tokens and self.draft_tokens >= 2:
            return int(self.draft_tokens)
        return None

    @property
    def vs_baseline(self) -> float | None:
        """Decode tok/s over the no-speculation baseline (< 1: speculation is slower), when one is given."""
        if not self.baseline_tps or self.gen_tokens_per_s is None:
            return None
        return self.gen_tokens_per_s / self.baseline_tps

    @property
    def saturation(self) -> float | None:
        """(accept_len - 1) / (ceiling - 1): 0 = every draft rejected, 1 = every draft accepted."""
        if self.accept_len is None or not self.ceiling or self.ceiling <= 1:
            return None
        return max(0.0, min(1.0, (self.accept_len - 1.0) / (self.ceiling - 1.0)))

    def rule_values(self) -> dict[str, Any]:
        """The names the rule engine's metric rules use (spectui.core.rules METRIC_NAMES), for a later hook."""
        return {"accept_len": self.accept_len, "accept_rate": self.accept_rate,
                "gen_tokens_per_s": self.gen_tokens_per_s, "running_req": self.running,
                "queue_req": self.queued, "queue_req_min": self.queued_min, "steps": self.steps,
                "draft_tokens": self.draft_tokens, "ceiling": self.ceiling, "saturation": self.saturation,
                "baseline_tps": self.baseline_tps}

    def to_json(self) -> dict[str, Any]:
        """The contract's instance fields (CONTRACTS `fleet`), diagnoses added by the caller."""
        return {"instance": self.instance, "job": self.job, "accept_len": _round(self.accept_len, 3),
                "accept_rate": _round(self.accept_rate, 3), "gen_tokens_per_s": _round(self.gen_tokens_per_s, 1),
                "running": self.running, "queued": self.queued, "speculative": self.speculative,
                "up": self.up, "steps": self.steps, "ceiling": self.ceiling, "ranks": self.ranks,
                "models": list(self.models)}


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


def _rank_key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k not in _SAME_BATCH_LABELS))


def _per_rank(samples: list[Sample]) -> dict[tuple[tuple[str, str], ...], float]:
    """rank key -> mean over the schedulers of that rank (finite values only)."""
    groups: dict[tuple[tuple[str, str], ...], list[float]] = defaultdict(list)
    for s in samples:
        if _finite(s.value):
            groups[_rank_key(s.labels)].append(s.value)
    return {k: sum(v) / len(v) for k, v in groups.items() if v}


def _weighted(values: dict[Any, float], weights: dict[Any, float]) -> float | None:
    if not values:
        return None
    w = {k: weights.get(k, 0.0) for k in values}
    total = sum(x for x in w.values() if x > 0)
    if total <= 0:
        return sum(values.values()) / len(values)
    return sum(values[k] * max(w[k], 0.0) for k in values) / total


def split_by_instance(samples: list[Sample]) -> dict[Key, list[Sample]]:
    out: dict[Key, list[Sample]] = defaultdict(list)
    for s in samples:
        out[(s.labels.get("job", ""), s.labels.get("instance", ""))].append(s)
    return out


def fold(record: InstanceMetrics, samples: list[Sample]) -> InstanceMetrics:
    """Fill `record` from the instant samples of ALL_NAMES for its target."""
    by_name: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_name[s.name].append(s)
    record.metric_names = frozenset(n for n in by_name if n in ALL_NAMES)
    ranks: dict[str, dict[Any, float]] = {}
    for fieldname, names in METRIC_NAMES.items():
        for name in names:
            if by_name.get(name):
                ranks[fieldname] = _per_rank(by_name[name])
                break
    tps = ranks.get("gen_tokens_per_s", {})
    if tps:
        record.gen_tokens_per_s = max(0.0, sum(tps.values()))
        record.gen_tokens_source = "gauge"
    for fieldname in ("running", "queued"):
        if ranks.get(fieldname):
            setattr(record, fieldname, int(round(sum(ranks[fieldname].values()))))
    accept = {k: v for k, v in ranks.get("accept_len", {}).items() if v > 0}
    record.accept_len = _weighted(accept, tps)
    rate = {k: v for k, v in ranks.get("accept_rate", {}).items() if k in accept and v >= 0}
    record.accept_rate = _weighted(rate, tps) if accept else None
    for fieldname in ("steps", "draft_tokens"):
        values = [v for v in ranks.get(fieldname, {}).values() if v > 0]
        setattr(record, fieldname, int(round(max(values))) if values else None)
    if record.steps is None and record.draft_tokens and 0 in ranks.get("steps", {}).values():
        record.steps = 0  # NGRAM: no draft forwards, draft tokens verified (the real server exports exactly that)
    keys = set().union(*(r.keys() for r in ranks.values())) if ranks else set()
    record.ranks = len(keys)
    record.models = tuple(sorted({s.labels["model_name"] for s in samples if s.labels.get("model_name")}))
    return record
