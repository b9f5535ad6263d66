"""The simulated scheduler: admits requests, runs decode rounds on the decode model, logs Prefill/Decode lines.

One clock: `--sim-time-scale X` is a GPU X times faster, and every figure a client can see is in the
wall-clock seconds that client measures. A round takes `DecodeModel.round_s(batch)` model seconds, which
is `round_s / X` on the wall clock; the engine sleeps that long, and only then emits the round's tokens
(and writes its Decode line), as a server returns a forward's output when the forward is done. The log's
gen throughput, prefill input throughput, /server_info and /metrics divide by wall seconds, so they agree
with what a client measures over the same window; accept len and every ratio are the same at any X.
At X = 1 the figures are the model's exactly (docs/SIMULATOR.md §2-3).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from spectui.sim.logfmt import LogFormat
from spectui.sim.model import DecodeModel

PREFILL_TPS = 12000.0  # simulated prefill speed, tokens/s
PREFILL_FIXED_S = 0.015
_WORDS = ("the", "model", "draft", "token", "accept", "verify", "server", "cache", "graph", "batch", "fast",
          "step", "tree", "chain", "length", "rate", "signal", "kernel", "memory", "queue", "request", "log")


@dataclass(eq=False)
class SimRequest:
    """One generation request in flight. `chunks` receives lists of token texts; None marks the end.

    Like SGLang, the prefill emits the first output token; every verify round after it commits
    accepted drafts + 1, and `histogram[j]` counts the rounds that accepted j drafts."""

    rid: str
    prompt_tokens: int
    max_tokens: int
    chunks: asyncio.Queue = field(default_factory=asyncio.Queue)
    generated: int = 0
    verify_ct: int = 0
    accepted_drafts: int = 0
    cached_tokens: int = 0
    histogram: list[int] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.generated >= self.max_tokens

    def record_round(self, accepted: int) -> None:
        self.verify_ct += 1
        self.accepted_drafts += accepted
        if len(self.histogram) <= accepted:
            self.histogram.extend([0] * (accepted + 1 - len(self.histogram)))
        self.histogram[accepted] += 1


@dataclass
class EngineStats:
    """What /metrics, /server_info and /v1/loads read; updated at Decode-line boundaries like SGLang."""

    last_gen_throughput: float = 0.0
    last_accept_len: float | None = None
    last_accept_rate: float | None = None
    spec_accept_tokens_total: int = 0  # lifetime, for avg_spec_accept_length (added at Decode lines)
    spec_verify_total: int = 0
    spec_cum_accept_tokens: int = 0  # the same two sums, added every round (spec_cumulative_* counters)
    spec_cum_forward_ct: int = 0
    spec_verify_calls_total: int = 0  # verify rounds of finished requests (sglang:spec_verify_calls_total)
    running: int = 0
    queue: int = 0
    used_tokens: int = 0
    token_usage: float = 0.0
    graph: bool = True
    generation_tokens_total: int = 0
    prompt_tokens_total: int = 0
    requests_total: int = 0
    requests_finished: int = 0

    @property
    def avg_spec_accept_length(self) -> float | None:
        return self.spec_accept_tokens_total / self.spec_verify_total if self.spec_verify_total else None


class Engine:
    def __init__(self, *, model: DecodeModel, fmt: LogFormat, write: Callable[[str], None], max_running: int,
                 max_total_tokens: int, decode_log_interval: int, graph_max_bs: int, time_scale: float,
                 seed: int = 0, dp_rank: int | None = None, tp_rank: int = 0) -> None:
        self.model, self.fmt, self.write = model, fmt, write
        self.dp_rank, self.tp_rank = dp_rank, tp_rank  # the scheduler that logs: TP0 of its DP group
        self.max_running, self.max_total_tokens = max_running, max_total_tokens
        self.interval = max(1, decode_log_interval)
        self.graph_max_bs, self.scale = graph_max_bs, time_scale
        self.rng = random.Random(seed)
        self.stats = EngineStats()
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.before_round: Callable[[], None] | None = None  # fault hook (crash-after)
        self._wake = asyncio.Event()
        self._ids = itertools.count(1)
        self._forward_ct = 0
        self._decode_ct = 0
        self._iv_tokens = self._iv_bs = self._iv_accept = 0
        self._iv_time = 0.0
        self._lag = 0.0  # wall seconds not yet slept
        self._pending: list[Callable[[], None]] = []  # what the work slept on emits once its time has passed

    @property
    def spec_draft_tokens(self) -> int | None:
        return self.model.spec.draft_tokens if self.model.spec else None

    def submit(self, prompt_tokens: int, max_tokens: int) -> SimRequest:
        req = SimRequest(f"{next(self._ids):032x}", max(1, prompt_tokens), max(1, max_tokens))
        self.waiting.append(req)
        self.stats.requests_total += 1
        self.stats.queue = len(self.waiting)
        self._wake.set()
        return req

    def token_text(self) -> str:
        return " " + self.rng.choice(_WORDS)

    async def run(self) -> None:
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
                self._lag = 0.0
            if self.before_round:
                self.before_round()
            busy = self._admit() if self.waiting and len(self.running) < self.max_running else 0.0
            if self.running:
                busy += self._round()
            await self._sleep(busy)

    async def _sleep(self, sim_s: float) -> None:
        # Batch tiny sleeps: asyncio cannot sleep 0.3 ms accurately, so owe the time and pay it in bulk;
        # what the owed work produced is emitted once the time is paid (never before its time has passed).
        self._lag += sim_s / self.scale
        idle = not self.running and not self.waiting
        if self._lag >= 0.004 or (idle and self._pending):
            start = time.monotonic()
            await asyncio.sleep(max(self._lag, 0.0))
            self._lag -= time.monotonic() - start
            self._lag = max(self._lag, -0.05)
            self._flush()
        else:
            await asyncio.sleep(0)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for emit in pending:
            emit()

    def _emit(self, req: SimRequest, item: list[str] | None) -> None:
        self._pending.append(lambda: req.chunks.put_nowait(item))

    def _admit(self) -> float:
        new: list[SimRequest] = []
        while self.waiting and len(self.running) + len(new) < self.max_running:
            new.append(self.waiting.popleft())
        tokens = sum(r.prompt_tokens for r in new)
        self.running.extend(new)
        self._forward_ct += 1
        self.stats.prompt_tokens_total += tokens
        pf_s = PREFILL_FIXED_S + tokens / PREFILL_TPS
        for req in new:  # the prefill's own output token (SGLang: extend samples the first token)
            req.generated += 1
            self.stats.generation_tokens_total += 1
            self._emit(req, [self.token_text()])
        self._finish_done()
        self._update_usage()
        line = self._tagged(self.fmt.prefill(
            counter=self._forward_ct, new_seq=len(new), new_token=tokens, cached=0, usage=self.stats.token_usage,
            running=len(self.running) - len(new), queue=len(self.waiting), graph=False,
            input_tps=tokens / (pf_s / self.scale)))  # per wall second, as a client measures it
        self.write(line)  # SGLang logs the Prefill batch line as the batch starts
        return pf_s

    def _round(self) -> float:
        batch = len(self.running)
        round_s = self.model.round_s(batch)
        self._forward_ct += 1
        self._decode_ct += 1
        committed = 0
        spec = self.model.spec is not None
        for req in self.running:
            # A round that reaches max_new_tokens commits only what is left; SGLang then counts the
            # accepted drafts over the truncated tokens, so every identity stays exact.
            n = min(self.model.sample_accept_len(self.rng), req.max_tokens - req.generated)
            req.generated += n
            if spec:
                req.record_round(n - 1)
            committed += n
            self._emit(req, [self.token_text() for _ in range(n)])
        self._iv_tokens += committed
        self._iv_bs += batch
        self._iv_time += round_s
        self.stats.generation_tokens_total += committed
        if spec:
            self.stats.spec_cum_accept_tokens += committed
            self.stats.spec_cum_forward_ct += batch
        self.stats.graph = batch <= self.graph_max_bs
        if self._decode_ct % self.interval == 0:
            line = self._log_decode()
            self._pending.append(lambda: self.write(line))  # logged once the round is done
        self._finish_done()
        self._update_usage()
        return round_s

    def _finish_done(self) -> None:
        for req in [r for r in self.running if r.done]:
            self.running.remove(req)
            self.stats.requests_finished += 1
            self.stats.spec_verify_calls_total += req.verify_ct
            self._emit(req, None)

    def _tagged(self, msg: str) -> str:
        return self.fmt.sched(msg, self.tp_rank, self.dp_rank)

    def _update_usage(self) -> None:
        s = self.stats
        s.running, s.queue = len(self.running), len(self.waiting)
        s.used_tokens = sum(r.prompt_tokens + r.generated for r in self.running)
        s.token_usage = s.used_tokens / self.max_total_tokens

    def _log_decode(self) -> str:
        s, spec = self.stats, self.model.spec
        accept_len = None
        if spec is not None:
            # SGLang: sum over rounds and requests of (accepted + 1) / sum over rounds of batch size.
            accept_len = self._iv_tokens / self._iv_bs
            s.spec_accept_tokens_total += self._iv_tokens
            s.spec_verify_total += self._iv_bs
            s.last_accept_len = accept_len
            s.last_accept_rate = self.fmt.accept_rate(accept_len, spec.num_steps, spec.draft_tokens)
        s.last_gen_throughput = self._iv_tokens / (self._iv_time / self.scale)  # per wall second
        self._update_usage()
        line = self._tagged(self.fmt.decode(
            counter=self._forward_ct, running=len(self.running), tokens=s.used_tokens, usage=s.token_usage,
            accept_len=accept_len, steps=spec.num_steps if spec else None,
            draft_tokens=spec.draft_tokens if spec else None, graph=s.graph, gen_tps=s.last_gen_throughput,
            queue=len(self.waiting)))
        self._iv_tokens = self._iv_bs = 0
        self._iv_time = 0.0
        return line
