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

A multi-turn prompt (`--gsp-num-turns`) is one conversation: it holds its concurrency slot while its turns
go out one after the other, each a request of its own in the result (bench_serving's multi-turn rounds);
`requests` and `duration_s` count and start conversations.

`stop` (an asyncio.Event, set on Ctrl-C): no request starts after it is set, the ones in flight are
cancelled (counted as `cancelled`, not measured), and the result holds the requests that completed
(`interrupted` true). `flush_cache`: POST /flush_cache (SGLang's prefix cache) after the warm-up, before
the window, as bench_serving's `--flush-cache`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp

from spectui.load.client import (
    ServerProbe,
    auth_headers,
    build_payload,
    normalize_base_url,
    post_json,
    probe_server,
    stream_request,
)
from spectui.load.errors import BenchConfigError, BenchError, BenchInterrupted, WarmupFailedError
from spectui.load.progress import ProgressCallback, _Live
from spectui.load.prompts import Prompt, PromptSet
from spectui.load.record import RequestRecord
from spectui.load.stats import error_counts, summarize

DEFAULT_REQUESTS = 64


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
    request_timeout_s: float = 600.0  # each request's total deadline (send to [DONE]): RequestTimeout after it
    speculative: bool | None = None  # the caller's knowledge (from /server_info); None: detect
    extra_body: dict[str, Any] = field(default_factory=dict)
    extra_headers: dict[str, str] = field(default_factory=dict)  # --header K=V
    flush_cache: bool = False  # POST /flush_cache before the window
    goodput: dict[str, float] = field(default_factory=dict)  # SLOs in ms: ttft, tpot, e2el

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
        if not (self.request_timeout_s > 0 and self.request_timeout_s < float("inf")):
            raise bad(f"--request-timeout must be > 0 seconds, got {self.request_timeout_s}")
        if self.endpoint not in ("auto", "chat", "completions"):
            raise bad(f"endpoint must be auto, chat or completions, got {self.endpoint!r}")


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
    cancelled: int = 0  # in flight when the run was stopped (Ctrl-C): not measured
    interrupted: bool = False
    turns: int = 1  # multi-turn: turns a conversation (`requests` counts conversations, the records turns)

    @property
    def duration_s(self) -> float:
        return self.window_end - self.window_start

    def summary(self) -> dict[str, Any]:
        return summarize(self.records, self.window_start, self.window_end, speculative=self.config.speculative,
                         goodput=self.config.goodput or None)

    def to_json(self) -> dict[str, Any]:
        """The contract's bench fields this layer owns (server/spec/baseline/speedup are added by the
        caller), plus `window`, `speculative`, `peak_output_tokens_per_s`, `output_tokens_source`."""
        c = self.config
        s = self.summary()
        s["requests"]["not_sent"] = self.not_sent
        s["requests"]["cancelled"] = self.cancelled
        workload = {"prompts": self.prompts, "requests": c.total_requests, "concurrency": c.concurrency,
                    "rate": c.rate, "max_tokens": c.max_tokens, "temperature": c.temperature,
                    "duration_limit_s": c.duration_s, "warmup": c.warmup, "model": self.server.model,
                    "ignore_eos": c.ignore_eos, "seed": c.seed, "flush_cache": c.flush_cache,
                    "request_timeout_s": c.request_timeout_s, "num_turns": self.turns}
        if c.extra_body:
            workload["extra_request_body"] = c.extra_body
        if c.extra_headers:
            workload["headers"] = sorted(c.extra_headers)  # names only: a header may carry a secret
        return {"workload": workload, **s, "interrupted": self.interrupted,
                "window": {"start": self.window_start_wall, "end": self.window_end_wall}}

    def per_request_spec(self) -> list[dict[str, Any] | None]:
        """Per measured request: its spec fields (None when the response carried none)."""
        return [r.spec.to_json() if r.spec else None for r in self.records]


class _Runner:
    def __init__(self, config: BenchConfig, prompts: PromptSet, http: aiohttp.ClientSession, model: str,
                 on_progress: ProgressCallback | None, progress_interval_s: float,
                 stop: asyncio.Event | None = None) -> None:
        self.c, self.http, self.model, self.stop = config, http, model, stop
        self.on_progress, self.interval = on_progress, progress_interval_s
        self.base = normalize_base_url(config.base_url)
        order = list(prompts.prompts)
        random.Random(config.seed).shuffle(order)
        self.order: list[Prompt] = order
        self.turns = prompts.turns
        self.slots = asyncio.Semaphore(config.concurrency) if config.concurrency else None

    def _endpoint(self, prompt: Prompt) -> str:
        if self.c.endpoint == "auto":
            return "chat" if prompt.is_chat else "completions"
        return self.c.endpoint

    async def _run(self, live: _Live, prompt: Prompt, warmup: bool) -> list[RequestRecord]:
        """One prompt: one request, or a multi-turn conversation's turns in order, each sent when the one
        before it has finished, with the history so far (the earlier answers included) and the new turn, as
        bench_serving's multi-turn rounds. A failed turn ends its conversation: the turns after it are not
        sent (counted in `not_sent`; bench_serving would go on with an empty answer)."""
        if not prompt.follow_ups:
            return [await self._one(live, prompt, warmup)]
        history = prompt.as_messages()
        out: list[RequestRecord] = []
        for turn, question in enumerate((None, *prompt.follow_ups)):
            if question is not None:
                history = [*history, {"role": "user", "content": question}]
            rec = await self._one(live, prompt, warmup, messages=history, turn=turn)
            out.append(rec)
            if not rec.ok:
                live.unsent += prompt.turns - turn - 1
                break
            history = [*history, {"role": "assistant", "content": "".join(rec.text or ())}]
        return out

    async def _one(self, live: _Live, prompt: Prompt, warmup: bool, *, messages: list[dict[str, str]] | None = None,
                   turn: int = 0) -> RequestRecord:
        endpoint = self._endpoint(prompt)
        index = live.next_index()
        rec = RequestRecord(index, prompt.id, endpoint, warmup, expected_input_tokens=None if turn else prompt.input_len,
                            text=[] if prompt.follow_ups else None, turn=turn)
        live.records.append(rec)
        live.active.add(index)
        try:
            path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
            body = build_payload(prompt, endpoint=endpoint, model=self.model, max_tokens=self.c.max_tokens,
                                 temperature=self.c.temperature, ignore_eos=self.c.ignore_eos,
                                 spec_details=self.c.spec_details, extra=self.c.extra_body, messages=messages)
            return await stream_request(self.http, self.base + path, body, rec, on_tokens=live.on_tokens,
                                        headers=self.c.extra_headers or None, deadline_s=self.c.request_timeout_s)
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
        live = _Live("warmup", n * self.turns, None)
        tick = asyncio.create_task(self._ticker(live))
        try:
            async def one(i: int) -> list[RequestRecord]:
                # from the end of the order: the first measured prompts are not already in the prefix cache
                prompt = self.order[-1 - i % len(self.order)]
                async with self.slots or contextlib.nullcontext():
                    return await self._run(live, prompt, True)

            gathered, stopped = await self._until_stopped(asyncio.gather(*(one(i) for i in range(n))))
        finally:
            tick.cancel()
        if stopped:
            raise BenchInterrupted("interrupted during the warm-up: nothing was measured")
        records = [r for recs in gathered for r in recs]
        if self.on_progress is not None:
            self.on_progress(live.snapshot())
        failed = warmup_failure(records)
        if failed is not None:
            raise failed
        return records

    async def _until_stopped(self, aw: Any) -> tuple[Any, bool]:
        """Await `aw` (a task); when `stop` is set first, cancel it: (its result or None, stopped)."""
        task = asyncio.ensure_future(aw)
        if self.stop is None:
            return await task, False
        stopper = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            stopper.cancel()
        if task.done():
            return task.result(), False
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return None, True

    async def measure(self) -> tuple[list[RequestRecord], float, float, float, int, int]:
        c = self.c
        total = c.total_requests
        live = _Live("measure", None if total is None else total * self.turns, c.duration_s)
        rng = random.Random(c.seed + 1)
        tasks: list[asyncio.Task[list[RequestRecord]]] = []
        not_sent = 0
        start_wall, start = time.time(), time.perf_counter()
        live.start = start
        deadline = start + c.duration_s if c.duration_s is not None else None
        tick = asyncio.create_task(self._ticker(live))

        async def open_loop(prompt: Prompt) -> list[RequestRecord]:
            nonlocal not_sent
            async with self.slots or contextlib.nullcontext():
                if deadline is not None and time.perf_counter() >= deadline:
                    not_sent += prompt.turns
                    return []
                return await self._run(live, prompt, False)

        async def closed_loop(prompt: Prompt) -> list[RequestRecord]:
            try:
                return await self._run(live, prompt, False)
            finally:
                assert self.slots is not None
                self.slots.release()

        async def drive() -> list[list[RequestRecord]]:
            i, next_t = 0, start
            while c.total_requests is None or i < c.total_requests:
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                prompt = self.order[i % len(self.order)]
                if c.rate is None and self.slots is not None:
                    if not await self._acquire(deadline):
                        break
                    tasks.append(asyncio.create_task(closed_loop(prompt)))
                else:
                    tasks.append(asyncio.create_task(open_loop(prompt)))
                i += 1
                if c.rate is not None:
                    next_t += rng.expovariate(c.rate)
                    wait = next_t - time.perf_counter()
                    if deadline is not None:
                        wait = min(wait, deadline - time.perf_counter())
                    if wait > 0:
                        await asyncio.sleep(wait)
            return list(await asyncio.gather(*tasks))

        try:
            done, stopped = await self._until_stopped(drive())
        except BaseException:
            for t in tasks:
                t.cancel()
            raise
        finally:
            tick.cancel()
        cancelled = 0
        if stopped:  # what completed counts; what was in flight is cancelled, not measured
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            flat = [r for r in live.records if r.end is not None]
            cancelled = len(live.records) - len(flat)
        else:
            flat = [r for recs in done for r in recs]
        end = max((r.end for r in flat if r.end is not None), default=time.perf_counter())
        records = sorted(flat, key=lambda r: r.index)
        if self.on_progress is not None:
            self.on_progress(live.snapshot("done"))
        return records, start, end, start_wall, not_sent + live.unsent, (cancelled if stopped else -1)

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


def warmup_failure(records: list[RequestRecord]) -> WarmupFailedError | None:
    """The error when every warm-up request failed (bench_serving stops there too), else None."""
    if not records or any(r.ok for r in records):
        return None
    kinds = ", ".join(f"{k} x{v}" for k, v in error_counts(records).items())
    detail = next((r.error_detail for r in records if r.error_detail), "")
    return WarmupFailedError(f"every warm-up request failed ({kinds}){': ' + detail if detail else ''}; "
                             "check the server log")


async def run_bench(config: BenchConfig, prompts: PromptSet, *, on_progress: ProgressCallback | None = None,
                    progress_interval_s: float = 0.25, stop: asyncio.Event | None = None) -> BenchResult:
    """Probe /v1/models, warm up, (flush the cache,) run the measured window. Raises BenchConfigError
    (exit 2) for bad options and a BenchError (exit 1) when the server cannot be benchmarked; failed
    requests are counted in the result, never raised. `stop` set: see the module docstring."""
    config.validate()
    if config.endpoint == "completions" and any(p.is_chat for p in prompts.prompts):
        raise BenchConfigError("the completions endpoint takes plain prompts; these prompts are chat "
                               "messages (use the chat endpoint)" + (" and a multi-turn conversation needs "
                               "the chat endpoint" if prompts.turns > 1 else ""))
    base = normalize_base_url(config.base_url)
    conns = (config.concurrency or 0) + 4 if config.concurrency else 0  # 0: no limit
    connector = aiohttp.TCPConnector(limit=conns, limit_per_host=0, ttl_dns_cache=300)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=config.request_timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=auth_headers(config.api_key),
                                     trust_env=False, read_bufsize=2**20, auto_decompress=False) as http:
        probe = await probe_server(http, base)
        runner = _Runner(config, prompts, http, config.model or probe.model, on_progress, progress_interval_s,
                         stop)
        warm = await runner.warmup()
        if config.flush_cache:
            await flush_cache(http, base)
        records, start, end, start_wall, not_sent, cancelled = await runner.measure()
    return BenchResult(config=config, prompts=prompts.name, server=probe, records=records, warmup_records=warm,
                       window_start=start, window_end=end, window_start_wall=start_wall,
                       window_end_wall=start_wall + (end - start), not_sent=not_sent,
                       cancelled=max(0, cancelled), interrupted=cancelled >= 0, turns=prompts.turns)


async def flush_cache(http: aiohttp.ClientSession, base: str) -> None:
    """SGLang's POST /flush_cache (as bench_serving's --flush-cache); a BenchError when it is refused."""
    try:
        status, text = await post_json(http, f"{base}/flush_cache", params={"timeout": "60"})
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise BenchError(f"--flush-cache: POST {base}/flush_cache failed ({type(exc).__name__})") from None
    if status != 200:
        raise BenchError(f"--flush-cache: POST {base}/flush_cache answered HTTP {status}"
                         f"{': ' + text.strip() if text.strip() else ''} (the server would not flush its cache)")


def config_json(config: BenchConfig) -> dict[str, Any]:
    """The config as JSON, without the API key."""
    out = asdict(config)
    out["api_key"] = "***" if config.api_key else None
    return out
