"""Data parallelism in the simulator: one Engine (scheduler) per DP rank behind one dispatcher.

Each DP rank logs its own Prefill/Decode lines with its `DPn TPm` tag, as SGLang does with --dp-size
(and DP attention); requests go to the least-loaded rank. With one rank this is a thin wrapper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from spectui.sim.engine import Engine, EngineStats, SimRequest


@dataclass(frozen=True, slots=True)
class Rank:
    dp: int | None  # None: no data parallelism (no DP tag)
    tp: int


def scheduler_ranks(tp_size: int, dp_size: int, dp_attention: bool) -> list[list[Rank]]:
    """All scheduler ranks, grouped by DP rank (the first of each group logs Decode lines).

    With DP attention the TP ranks are split among the DP groups (DP1 -> TP4..7 at tp 8, dp 2); plain DP
    runs dp replicas of tp ranks each."""
    tp, dp = max(1, tp_size), max(1, dp_size)
    if dp == 1:
        return [[Rank(None, t) for t in range(tp)]]
    per = max(1, tp // dp) if dp_attention else tp
    return [[Rank(d, d * per + t if dp_attention else t) for t in range(per)] for d in range(dp)]


class EngineGroup:
    def __init__(self, engines: list[Engine]) -> None:
        self.engines = engines

    @property
    def model(self):
        return self.engines[0].model

    @property
    def spec_draft_tokens(self) -> int | None:
        return self.engines[0].spec_draft_tokens

    @property
    def max_running(self) -> int:
        return sum(e.max_running for e in self.engines)

    @property
    def waiting(self) -> int:
        return sum(len(e.waiting) for e in self.engines)

    def set_before_round(self, hook: Callable[[], None]) -> None:
        for e in self.engines:
            e.before_round = hook

    def submit(self, prompt_tokens: int, max_tokens: int) -> SimRequest:
        target = min(self.engines, key=lambda e: len(e.running) + len(e.waiting))
        return target.submit(prompt_tokens, max_tokens)

    async def run(self) -> None:
        """Run every rank; when one stops with an exception (an injected crash), the others stop too."""
        async with asyncio.TaskGroup() as tg:
            for e in self.engines:
                tg.create_task(e.run())

    @property
    def stats(self) -> EngineStats:
        """Server totals: counters and gauges summed over ranks, accept len weighted by verify rounds."""
        parts = [e.stats for e in self.engines]
        if len(parts) == 1:
            return parts[0]
        total = EngineStats()
        for name in ("spec_accept_tokens_total", "spec_verify_total", "spec_cum_accept_tokens", "spec_cum_forward_ct",
                     "spec_verify_calls_total", "running", "queue", "used_tokens",
                     "generation_tokens_total", "prompt_tokens_total", "requests_total", "requests_finished",
                     "last_gen_throughput"):
            setattr(total, name, sum(getattr(p, name) for p in parts))
        lens = [p.last_accept_len for p in parts if p.last_accept_len is not None]
        total.last_accept_len = sum(lens) / len(lens) if lens else None
        rates = [p.last_accept_rate for p in parts if p.last_accept_rate is not None]
        total.last_accept_rate = sum(rates) / len(rates) if rates else None
        total.token_usage = max(p.token_usage for p in parts)
        total.graph = all(p.graph for p in parts)
        return total
