"""The simulator's `/metrics`: SGLang's metric names and labels (docs/REFERENCE.md §4.3) in Prometheus text format.

prometheus_client writes the exposition so the escaping and the counter `_total` suffixes are exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from spectui.sim.state import SimState


class _Collector:
    def __init__(self, state: SimState) -> None:
        self.s = state

    def collect(self):
        s, v = self.s, self.s.fmt.v
        spec = s.engine.model.spec
        base = {"model_name": s.model_name, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
        if v >= (0, 5, 16):  # the real 0.5.16 snapshot (shared/real-sglang) already labels it
            base["moe_ep_rank"] = "0"
        families: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, doc: str, labels: dict[str, str], value: float) -> None:
            fam = families.get(name)
            if fam is None:
                fam = families[name] = GaugeMetricFamily(f"sglang:{name}", doc, labels=list(labels))
            fam.add_metric(list(labels.values()), value)

        # One series per stats-logging scheduler (TP0 of each DP rank), like SGLang's multiprocess gauges.
        for e in s.engine.engines:
            stats = e.stats
            labels = {**base, "tp_rank": str(e.tp_rank)}
            if e.dp_rank is not None:
                labels["dp_rank"] = str(e.dp_rank)
            gauge("num_running_reqs", "The number of running requests.", labels, stats.running)
            gauge("num_queue_reqs", "The number of requests in the waiting queue.", labels, stats.queue)
            gauge("num_used_tokens", "The number of used tokens.", labels, stats.used_tokens)
            gauge("token_usage", "The token usage.", labels, stats.token_usage)
            gauge("gen_throughput", "The generation throughput (token/s).", labels, stats.last_gen_throughput)
            gauge("cache_hit_rate", "The prefix cache hit rate.", labels, 0.0)
            gauge("spec_accept_length", "Mean acceptance length of speculative decoding (accepted drafts + "
                  "bonus token per forward).", labels, stats.last_accept_len or 0.0)
            if v >= (0, 5, 4):
                gauge("spec_accept_rate", "The acceptance rate of speculative decoding.", labels,
                      stats.last_accept_rate or 0.0)
                gauge("is_cuda_graph", "Whether the batch is using CUDA graph.", labels, float(stats.graph))
            if v >= (0, 5, 6):
                gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", labels,
                      s.max_total_tokens)
            if v >= (0, 5, 16):  # DSpark's capped verify window: 0 for every other algorithm (real SGLang too)
                gauge("spec_cap_length", "Mean DSpark confidence-scheduled verify window per verify step, incl "
                      "the bonus slot (0 when no cap is scheduled).", labels, 0.0)
                gauge("spec_block_accept_length", "Mean uncapped full-block accept length per verify step (accept "
                      "+ cap-trimmed drafts; exact only in DSpark cap-accept mode).", labels, 0.0)
            if v >= (0, 5, 15) and spec is not None:
                gauge("spec_num_steps", "Active speculative num steps.", labels, spec.num_steps)
                gauge("spec_num_draft_tokens", "Active speculative num draft tokens.", labels, spec.draft_tokens)
        yield from families.values()
        stats = s.engine.stats
        tok_names = ["model_name", "engine_type"]
        tok_values = [s.model_name, "unified"]
        counters = [("prompt_tokens", "Number of prefill tokens processed.", stats.prompt_tokens_total),
                    ("generation_tokens", "Number of generation tokens processed.", stats.generation_tokens_total),
                    ("num_requests", "The number of requests.", stats.requests_total)]
        if v >= (0, 5, 15) and spec is not None:  # tokenizer side, += spec_verify_ct of each finished request
            counters.append(("spec_verify_calls", "Number of speculative decoding verification calls.",
                             stats.spec_verify_calls_total))
        for name, doc, value in counters:
            c = CounterMetricFamily(f"sglang:{name}", doc, labels=tok_names)
            c.add_metric(tok_values, value)
            yield c


def render_metrics(state: SimState) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(state))  # type: ignore[arg-type]
    return generate_latest(registry).decode()
