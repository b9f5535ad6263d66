"""What one request measured (RequestRecord), and the per-request figures derived from it.

Inter-token latency as SGLang's bench_serving defines it since PR #12064 (sglang/benchmark/serving.py,
async_request_sglang_generate; and calculate_metrics' retokenized ITL for the OpenAI backends under
speculation): every text chunk after the first contributes its gap to the previous text chunk split
evenly across the k tokens it carries, k times (gap/k, k values). A chunk that carries no new token
contributes nothing, and the next gap is measured from the last chunk that carried one. So under
speculation, where one chunk carries a whole verify round, ITL is per token, not per chunk.
`chunk_gaps` keeps the plain per-chunk gaps (what spectui called ITL before).

Tokens per chunk: the server's count when it reports one per chunk (`continuous_usage_stats`, meta_info):
source "server". Else, with the request's total known (usage), the first chunk is taken as 1 token and
the rest spread evenly over the other chunks (largest remainder): source "estimated". Else 1 per chunk:
source "chunks".

Per-request decode speed (`decode_tokens_per_s`): the tokens after the first chunk over the time from the
first chunk to the last. A request whose tokens all came in one chunk has no decode interval and no
speed (None): never a division by a near-zero time. The run's mean is Σ decode tokens / Σ decode time
over the requests (the time-weighted mean: a request with a tiny decode time weighs as little as its
time), so one outlier cannot inflate it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spectui.load.specfields import SpecFields


@dataclass
class RequestRecord:
    """Everything measured for one request. Times are time.perf_counter() seconds."""

    index: int
    prompt_id: str
    endpoint: str  # "chat" | "completions"
    warmup: bool
    start: float = 0.0
    start_wall: float = 0.0  # time.time() at start (to match server-side logs and counters)
    first_token: float | None = None
    end: float | None = None
    chunk_times: list[float] = field(default_factory=list)  # chunks carrying generated text
    chunk_tokens: list[int | None] = field(default_factory=list)  # tokens in each, when the server said
    output_tokens: int | None = None
    output_tokens_source: str | None = None  # "usage" | "chunks"
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    status: int | None = None
    error: str | None = None  # the error kind; None = success
    error_detail: str | None = None
    spec: SpecFields = field(default_factory=SpecFields)
    streamed_tokens: int = 0  # live, while streaming: tokens the server reported per chunk ...
    streamed_unknown: int = 0  # ... plus chunks whose token count it did not report (counted 1 each)
    expected_input_tokens: int | None = None  # the workload's own input length (random, ShareGPT), if any
    text: list[str] | None = None  # the answer's text pieces, kept when asked (a multi-turn history needs them)
    turn: int = 0  # a multi-turn conversation's turn (0: its first, or a single request)

    @property
    def ok(self) -> bool:
        return self.error is None and self.end is not None

    @property
    def end_wall(self) -> float | None:
        return None if self.end is None else self.start_wall + (self.end - self.start)

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def e2e(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def tpot(self) -> float | None:
        """(e2e - ttft) / (output_tokens - 1), only when output_tokens > 1 (bench_serving)."""
        if not self.ok or not self.output_tokens or self.output_tokens <= 1 or self.ttft is None:
            return None
        return (self.e2e - self.ttft) / (self.output_tokens - 1)  # type: ignore[operator]

    def token_counts(self) -> tuple[list[int], str]:
        """Tokens per text chunk and where the counts come from ("server", "estimated", "chunks")."""
        n = len(self.chunk_times)
        known = self.chunk_tokens
        if n == 0:
            return [], "server"
        if len(known) == n and all(k is not None for k in known):
            return [int(k or 0) for k in known], "server"
        total = self.output_tokens
        if total is None or total < n:
            return [1 if k is None else k for k in known] + [1] * (n - len(known)), "chunks"
        counts = list(known) + [None] * (n - len(known))
        free = [i for i, k in enumerate(counts) if k is None]
        left = total - sum(k for k in counts if k is not None)
        if counts[0] is None and len(free) > 1 and left >= len(free):  # the prefill's chunk: one token
            counts[0], left, free = 1, left - 1, free[1:]
        if left < len(free):
            return [1 if k is None else k for k in counts], "chunks"
        base, extra = divmod(left, len(free))
        for j, i in enumerate(free):
            counts[i] = base + (1 if j < extra else 0)
        return [int(k or 0) for k in counts], "estimated"

    @property
    def chunk_gaps(self) -> list[float]:
        """The gaps between consecutive text chunks: one per chunk, whatever it carried."""
        t = self.chunk_times
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    @property
    def itls(self) -> list[float]:
        """bench_serving's inter-token latencies (see the module docstring)."""
        t = self.chunk_times
        if len(t) < 2:
            return []
        counts, _ = self.token_counts()
        out: list[float] = []
        last = t[0]
        for i in range(1, len(t)):
            k = counts[i]
            if k <= 0:
                continue
            gap = t[i] - last
            out.extend([gap / k] * k)
            last = t[i]
        return out

    def decode_interval(self) -> tuple[int, float] | None:
        """(tokens after the first chunk, last chunk - first chunk), or None without such an interval."""
        t = self.chunk_times
        if not self.ok or len(t) < 2:
            return None
        counts, _ = self.token_counts()
        tokens, span = sum(counts[1:]), t[-1] - t[0]
        if tokens <= 0 or span <= 0:
            return None
        return tokens, span

    @property
    def decode_tokens_per_s(self) -> float | None:
        """This request's decode speed: tokens after its first chunk over the time they took."""
        d = self.decode_interval()
        return None if d is None else d[0] / d[1]

    def to_json(self) -> dict[str, Any]:
        ms = (lambda x: None if x is None else round(x * 1000, 3))  # noqa: E731
        speed = self.decode_tokens_per_s
        return {"index": self.index, "prompt": self.prompt_id, "endpoint": self.endpoint, "ok": self.ok,
                "error": self.error, "error_detail": self.error_detail, "status": self.status,
                "start": self.start_wall, "end": self.end_wall, "ttft_ms": ms(self.ttft),
                "e2e_ms": ms(self.e2e), "tpot_ms": ms(self.tpot), "chunks": len(self.chunk_times),
                "output_tokens": self.output_tokens, "output_tokens_source": self.output_tokens_source,
                "prompt_tokens": self.prompt_tokens, "finish_reason": self.finish_reason,
                "decode_tokens_per_s": None if speed is None else round(speed, 3), "turn": self.turn,
                "spec": self.spec.to_json() if self.spec else None}
