"""The simulator's `/metrics`: SGLang's metric names and labels (REFERENCE §4.3) in Prometheus text format.

prometheus_client writes the exposition so the escaping and the counter `_total` suffixes are exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from spectui.sim.routes import SimState


class _Collector:
    def __init__(self, state: SimState) -> None:
        self.s = state

    def collect(self):
        s, v, stats = self.s, self.s.fmt.v, self.s.engine.stats
        labels = {"model_name": s.model_name, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
        if v >= (0, 5, 20):
            labels["moe_ep_rank"] = "0"
        names, values = list(labels), list(labels.values())
        spec = s.engine.model.spec

        def gauge(name: str, doc: str, value: float):
            g = GaugeMetricFamily(f"sglang:{name}", doc, labels=names)
            g.add_metric(values, value)
            return g

        yield gauge("num_running_reqs", "The number of running requests.", stats.running)
        yield gauge("num_queue_reqs", "The number of requests in the waiting queue.", stats.queue)
        yield gauge("num_used_tokens", "The number of used tokens.", stats.used_tokens)
        yield gauge("token_usage", "The token usage.", stats.token_usage)
        yield gauge("gen_throughput", "The generation throughput (token/s).", stats.last_gen_throughput)
        yield gauge("cache_hit_rate", "The prefix cache hit rate.", 0.0)
        yield gauge("spec_accept_length", "Mean acceptance length of speculative decoding (accepted drafts + "
                    "bonus token per forward).", stats.last_accept_len or 0.0)
        if v >= (0, 5, 4):
            yield gauge("spec_accept_rate", "The acceptance rate of speculative decoding.", stats.last_accept_rate or 0.0)
            yield gauge("is_cuda_graph", "Whether the batch is using CUDA graph.", float(stats.graph))
        if v >= (0, 5, 6):
            yield gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
                        s.max_total_tokens)
        if v >= (0, 5, 15) and spec is not None:
            yield gauge("spec_num_steps", "Active speculative num steps.", spec.num_steps)
            yield gauge("spec_num_draft_tokens", "Active speculative num draft tokens.", spec.draft_tokens)
        tok_names = ["model_name", "engine_type"]
        tok_values = [s.model_name, "unified"]
        for name, doc, value in (("prompt_tokens", "Number of prefill tokens processed.", stats.prompt_tokens_total),
                                 ("generation_tokens", "Number of generation tokens processed.",
                                  stats.generation_tokens_total),
                                 ("num_requests", "The number of requests.", stats.requests_total)):
            c = CounterMetricFamily(f"sglang:{name}", doc, labels=tok_names)
            c.add_metric(tok_values, value)
            yield c


def render_metrics(state: SimState) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(state))  # type: ignore[arg-type]
    return generate_latest(registry).decode()
