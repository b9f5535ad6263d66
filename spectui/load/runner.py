"""The load generator: warm-up, then the measured window (concurrency limit, Poisson arrivals, a request
count or a duration), with a progress callback for a progress bar or the TUI.

Arrivals follow bench_serving's `get_request`: without `rate` every request is released at once and
only the concurrency limit paces them (a closed loop: the next request starts when one finishes); with
`rate` R the gaps are exponential with mean 1/R (seeded; an absolute schedule, so event-loop lag does
not slow the process down) and a request that arrives while `concurrency` are in flight waits for a
slot, its TTFT counting the wait as bench_serving's does.

`duration_s` S: no request starts after S seconds (ones still waiting for a slot are not sent and are
counted as `not_sent`); the ones in flight finish and count, so the window is S plus the drain.
The measured window runs from the first measured request's start to the last one's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from spectui.load.client import (
    RequestRecord,
    ServerProbe,
    auth_headers,
    build_payload,
    normalize_base_url,
    probe_server,
    stream_request,
)
from spectui.load.errors import BenchConfigError, WarmupFailedError
from spectui.load.prompts import Prompt, PromptSet
from spectui.load.stats import error_counts, summarize

DEFAULT_REQUESTS = 64
RECENT_S = 2.0  # window of Progress.recent_tokens_per_s


@dataclass(frozen=True)
class BenchConfig:
    base_url: str  # http://host:port (a trailing /v1 is accepted)
    requests: int | None = None  # None and no duration_s: DEFAULT_REQUESTS
    duration_s: float | None = None
    concurrency: int | None = 4  # None: no limit
    rate: float | None = None  # requests/s, Poisson; None: all at once (paced by concurrency)
    warmup: int = 1
    max_tokens: int = 256
    temperature: float = 0.0
    api_key: str | None = None
    model: str | None = None  # None: the first model /v1/models lists
    endpoint: str = "auto"  # "auto" (chat for messages, completions for plain prompts) | "chat" | "completions"
    ignore_eos: bool = False
    spec_details: bool = True  # ask SGLang for sglext.spec_tokens_details
    seed: int = 0
    request_timeout_s: float = 600.0
    speculative: bool | None = None  # the caller's knowledge (from /server_info); None: detect
    extra_body: dict[str, Any] = field(default_factory=dict)

    @property
    def total_requests(self) -> int | None:
        if self.requests is None and self.duration_s is None:
            return DEFAULT_REQUESTS
        return self.requests

    def validate(self) -> None:
        def bad(msg: str) -> BenchConfigError:
            return BenchConfigError(msg)

        if self.requests is not None and self.duration_s is not None:
            raise bad("give --requests or --duration, not both")
        if self.requests is not None and self.requests < 1:
            raise bad(f"--requests must be at least 1, got {self.requests}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise bad(f"--duration must be > 0 seconds, got {self.duration_s}")
        if self.concurrency is not None and self.concurrency < 1:
            raise bad(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.rate is not None and not self.rate > 0:
            raise bad(f"--rate must be > 0 requests/s, got {self.rate}")
        if self.duration_s is not None and self.concurrency is None and self.rate is None:
            raise bad("--duration needs --concurrency or --rate (else requests would start without end)")
        if self.warmup < 0:
            raise bad(f"--warmup must be >= 0, got {self.warmup}")
        if self.max_tokens < 1:
            raise bad(f"--max-tokens must be at least 1, got {self.max_tokens}")
        if not self.temperature >= 0:
            raise bad(f"--temperature must be >= 0, got {self.temperature}")
        if self.endpoint not in ("auto", "chat", "completions"):
            raise bad(f"endpoint must be auto, chat or completions, got {self.endpoint!r}")


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str  # "warmup" | "measure" | "done"
    ok: int
    failed: int
    in_flight: int
    total: int | None  # requests of this phase; None in duration mode
    elapsed_s: float
    duration_s: float | None  # the duration limit, if any
    output_tokens: int  # tokens of this phase so far: finished requests' usage, in-flight estimates
    tokens_per_s: float | None  # output_tokens / elapsed_s
    recent_tokens_per_s: float | None  # tokens that arrived in the last RECENT_S seconds / RECENT_S

    @property
    def done(self) -> int:
        return self.ok + self.failed


@dataclass
class BenchResult:
    config: BenchConfig
    prompts: str
    server: ServerProbe
    records: list[RequestRecord]  # the measured requests, in the order they were started
    warmup_records: list[RequestRecord]
    window_start: float  # perf_counter
    window_end: float
    window_start_wall: float  # time.time(): match /server_info counter reads and log lines to these
    window_end_wall: float
    not_sent: int = 0

    @property
    def duration_s(self) -> float:
        return self.window_end - self.window_start

    def summary(self) -> dict[str, Any]:
        return summarize(self.records, self.window_start, self.window_end, speculative=self.config.speculative)

    def to_json(self) -> dict[str, Any]:
        """The contract's bench fields this layer owns (server/spec/baseline/speedup are added by the
        caller), plus `window`, `speculative`, `peak_output_tokens_per_s`, `output_tokens_source`."""
        c = self.config
        s = self.summary()
        s["requests"]["not_sent"] = self.not_sent
        workload = {"prompts": self.prompts, "requests": c.total_requests, "concurrency": c.concurrency,
                    "rate": c.rate, "max_tokens": c.max_tokens, "temperature": c.temperature,
                    "duration_limit_s": c.duration_s, "warmup": c.warmup, "model": self.server.model}
        return {"workload": workload, **s,
                "window": {"start": self.window_start_wall, "end": self.window_end_wall}}

    def per_request_spec(self) -> list[dict[str, Any] | None]:
        """Per measured request: its spec fields (None when the response carried none)."""
        return [r.spec.to_json() if r.spec else None for r in self.records]


class _Live:
    """Counters for the progress callback. Chunks whose token count the server did not report are
    scaled by the tokens per such chunk of the requests finished so far (1.0 until one finishes), so
    the live figures are not off by the accept length under speculation."""

    def __init__(self, phase: str, total: int | None, duration: float | None) -> None:
        self.phase, self.total, self.duration = phase, total, duration
        self.start = time.perf_counter()
        self.records: list[RequestRecord] = []
        self.active: set[int] = set()
        self.arrivals: deque[tuple[float, int, bool]] = deque()  # (time, tokens or chunks, known)

    def on_tokens(self, t: float, n: int | None) -> None:
        self.arrivals.append((t, 1 if n is None else n, n is not None))

    def snapshot(self, phase: str | None = None) -> Progress:
        now = time.perf_counter()
        while self.arrivals and self.arrivals[0][0] < now - RECENT_S:
            self.arrivals.popleft()
        ok = failed = tokens = unknown_chunks = 0
        calib_tokens = calib_chunks = 0
        for r in self.records:
            if r.index in self.active:
                tokens += r.streamed_tokens
                unknown_chunks += r.streamed_unknown
            elif r.ok:
                ok += 1
                tokens += r.output_tokens or 0
                if r.streamed_unknown:
                    calib_tokens += (r.output_tokens or 0) - r.streamed_tokens
                    calib_chunks += r.streamed_unknown
            else:
                failed += 1
        per_chunk = calib_tokens / calib_chunks if calib_chunks and calib_tokens > 0 else 1.0
        tokens_f = tokens + unknown_chunks * per_chunk
        elapsed = now - self.start
        recent = None
        if elapsed > 0:
            recent = sum(n if known else n * per_chunk for _, n, known in self.arrivals) / min(RECENT_S, elapsed)
        return Progress(phase or self.phase, ok, failed, len(self.active), self.total, elapsed, self.duration,
                        round(tokens_f), tokens_f / elapsed if elapsed > 0 else None, recent)


ProgressCallback = Callable[[Progress], None]


class _Runner:
    def __init__(self, config: BenchConfig, prompts: PromptSet, http: httpx.AsyncClient, model: str,
                 on_progress: ProgressCallback | None, progress_interval_s: float) -> None:
        self.c, self.http, self.model = config, http, model
        self.on_progress, self.interval = on_progress, progress_interval_s
        self.base = normalize_base_url(config.base_url)
        order = list(prompts.prompts)
        random.Random(config.seed).shuffle(order)
        self.order: list[Prompt] = order
        self.slots = asyncio.Semaphore(config.concurrency) if config.concurrency else None

    def _endpoint(self, prompt: Prompt) -> str:
        if self.c.endpoint == "auto":
            return "chat" if prompt.is_chat else "completions"
        return self.c.endpoint

    async def _one(self, live: _Live, index: int, prompt: Prompt, warmup: bool) -> RequestRecord:
        endpoint = self._endpoint(prompt)
        rec = RequestRecord(index, prompt.id, endpoint, warmup)
        live.records.append(rec)
        live.active.add(index)
        try:
            path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
            body = build_payload(prompt, endpoint=endpoint, model=self.model, max_tokens=self.c.max_tokens,
                                 temperature=self.c.temperature, ignore_eos=self.c.ignore_eos,
                                 spec_details=self.c.spec_details, extra=self.c.extra_body)
            return await stream_request(self.http, self.base + path, body, rec, on_tokens=live.on_tokens)
        finally:
            live.active.discard(index)

    async def _ticker(self, live: _Live) -> None:
        if self.on_progress is None:
            return
        while True:
            await asyncio.sleep(self.interval)
            self.on_progress(live.snapshot())

    async def warmup(self) -> list[RequestRecord]:
        n = self.c.warmup
        if n == 0:
            return []
        live = _Live("warmup", n, None)
        tick = asyncio.create_task(self._ticker(live))
        try:
            async def one(i: int) -> RequestRecord:
                # from the end of the order: the first measured prompts are not already in the prefix cache
                prompt = self.order[-1 - i % len(self.order)]
                async with self.slots or contextlib.nullcontext():
                    return await self._one(live, i, prompt, True)

            records = list(await asyncio.gather(*(one(i) for i in range(n))))
        finally:
            tick.cancel()
        if self.on_progress is not None:
            self.on_progress(live.snapshot())
        if not any(r.ok for r in records):
            kinds = ", ".join(f"{k} x{v}" for k, v in error_counts(records).items())
            detail = next((r.error_detail for r in records if r.error_detail), "")
            raise WarmupFailedError(f"every warm-up request failed ({kinds}){': ' + detail if detail else ''}; "
                                    "check the server log")
        return records

    async def measure(self) -> tuple[list[RequestRecord], float, float, float, int]:
        c = self.c
        live = _Live("measure", c.total_requests, c.duration_s)
        rng = random.Random(c.seed + 1)
        tasks: list[asyncio.Task[RequestRecord | None]] = []
        not_sent = 0
        start_wall, start = time.time(), time.perf_counter()
        live.start = start
        deadline = start + c.duration_s if c.duration_s is not None else None
        tick = asyncio.create_task(self._ticker(live))

        async def open_loop(i: int, prompt: Prompt) -> RequestRecord | None:
            nonlocal not_sent
            async with self.slots or contextlib.nullcontext():
                if deadline is not None and time.perf_counter() >= deadline:
                    not_sent += 1
                    return None
                return await self._one(live, i, prompt, False)

        async def closed_loop(i: int, prompt: Prompt) -> RequestRecord:
            try:
                return await self._one(live, i, prompt, False)
            finally:
                assert self.slots is not None
                self.slots.release()

        try:
            i, next_t = 0, start
            while c.total_requests is None or i < c.total_requests:
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                prompt = self.order[i % len(self.order)]
                if c.rate is None and self.slots is not None:
                    if not await self._acquire(deadline):
                        break
                    tasks.append(asyncio.create_task(closed_loop(i, prompt)))
                else:
                    tasks.append(asyncio.create_task(open_loop(i, prompt)))
                i += 1
                if c.rate is not None:
                    next_t += rng.expovariate(c.rate)
                    wait = next_t - time.perf_counter()
                    if deadline is not None:
                        wait = min(wait, deadline - time.perf_counter())
                    if wait > 0:
                        await asyncio.sleep(wait)
            done = await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        finally:
            tick.cancel()
        end = max((r.end for r in done if r is not None and r.end is not None), default=time.perf_counter())
        records = sorted((r for r in done if r is not None), key=lambda r: r.index)
        if self.on_progress is not None:
            self.on_progress(live.snapshot("done"))
        return records, start, end, start_wall, not_sent

    async def _acquire(self, deadline: float | None) -> bool:
        """Take a concurrency slot; False (and no slot held) when the deadline passes first."""
        assert self.slots is not None
        if deadline is None:
            await self.slots.acquire()
            return True
        try:
            await asyncio.wait_for(self.slots.acquire(), max(0.0, deadline - time.perf_counter()))
        except TimeoutError:
            return False
        if time.perf_counter() >= deadline:
            self.slots.release()
            return False
        return True


async def run_bench(config: BenchConfig, prompts: PromptSet, *, on_progress: ProgressCallback | None = None,
                    progress_interval_s: float = 0.25, transport: httpx.AsyncBaseTransport | None = None,
                    ) -> BenchResult:
    """Probe /v1/models, warm up, run the measured window. Raises BenchConfigError (exit 2) for bad
    options and a BenchError (exit 1) when the server cannot be benchmarked; failed requests are
    counted in the result, never raised."""
    config.validate()
    if config.endpoint == "completions" and any(p.is_chat for p in prompts.prompts):
        raise BenchConfigError("the completions endpoint takes plain prompts; these prompts are chat "
                               "messages (use the chat endpoint)")
    base = normalize_base_url(config.base_url)
    conns = (config.concurrency or 0) + 4 if config.concurrency else None
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    timeout = httpx.Timeout(config.request_timeout_s, connect=10.0, pool=None)
    async with httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport,
                                 headers=auth_headers(config.api_key), trust_env=False) as http:
        probe = await probe_server(http, base)
        runner = _Runner(config, prompts, http, config.model or probe.model, on_progress, progress_interval_s)
        warm = await runner.warmup()
        records, start, end, start_wall, not_sent = await runner.measure()
    return BenchResult(config=config, prompts=prompts.name, server=probe, records=records, warmup_records=warm,
                       window_start=start, window_end=end, window_start_wall=start_wall,
                       window_end_wall=start_wall + (end - start), not_sent=not_sent)


def config_json(config: BenchConfig) -> dict[str, Any]:
    """The config as JSON, without the API key."""
    out = asdict(config)
    out["api_key"] = "***" if config.api_key else None
    return out
