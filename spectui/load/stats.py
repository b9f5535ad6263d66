"""Summary statistics of a bench run, defined as SGLang's bench_serving `calculate_metrics` defines them.

  output_tokens          sum of usage.completion_tokens over successful requests (failed ones count 0)
  input_tokens           sum of usage.prompt_tokens (else the workload's own input length) over them
  duration_s             the measured window: first measured request sent -> last one finished
  output_tokens_per_s    output_tokens / duration_s (bench_serving `output_throughput`)
  input_tokens_per_s, total_tokens_per_s, requests_per_s   (`input_throughput`, `total_throughput`,
                         `request_throughput`: completed requests / duration_s)
  concurrency            Σ e2e / duration_s: the mean number of requests in flight (bench_serving's)
  ttft_ms                per successful request: first generated-text chunk - start
  tpot_ms                per successful request with output_tokens > 1: (e2e - ttft) / (output_tokens - 1)
  itl_ms                 pooled: bench_serving's per-token ITL (a chunk's gap split over its tokens;
                         spectui.load.record); `itl_tokens_source` says where the tokens per chunk came from
  chunk_gap_ms           pooled: the plain gaps between consecutive text chunks, one per chunk
  e2e_ms                 per successful request: end of stream - start
  per_request_tokens_per_s  per request: tokens after the first chunk / (last chunk - first chunk); its
                         `mean` is Σ decode tokens / Σ decode time (never a division by one request's
                         near-zero time), `p50` the median request
  goodput                with SLOs (ms; ttft, tpot, e2el): bench_serving's `request_goodput` (requests that
                         met every SLO / duration), `slo_attainment` (/ requests sent) and per metric
Distributions: mean, p50, p90, p95, p99, std (population, numpy.std's default), max. Percentiles
interpolate linearly between order statistics (numpy.percentile's default); p50 is the median. A
distribution over no values is null (bench_serving would print 0).

`peak_output_tokens_per_s` (bench_serving's "peak output throughput": the most tokens that arrived in one
1-second bucket of the window) is null for speculative runs, where one chunk carries several tokens and
the per-bucket count is not what the server's throughput is; it is also null when per-chunk token
counts are unknown and speculation is not ruled out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from spectui.load.record import RequestRecord

POINTS = (50, 90, 95, 99)
GOODPUT_METRICS = ("ttft", "tpot", "e2el")


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """numpy.percentile(values, p) with the default 'linear' method; `sorted_values` must be sorted."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no values")
    k = (n - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def distribution(values: Iterable[float], *, scale: float = 1.0, points: Sequence[int] = POINTS,
                 digits: int = 3, spread: bool = True) -> dict[str, float | None]:
    xs = sorted(v * scale for v in values)
    keys = ["mean", *(f"p{p}" for p in points), *(("std", "max") if spread else ())]
    if not xs:
        return dict.fromkeys(keys)
    mean = math.fsum(xs) / len(xs)
    out: dict[str, float | None] = {"mean": round(mean, digits)}
    for p in points:
        out[f"p{p}"] = round(percentile(xs, p), digits)
    if spread:
        out["std"] = round(math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs)), digits)
        out["max"] = round(xs[-1], digits)
    return out


def decode_speed(records: Iterable[RequestRecord]) -> dict[str, Any]:
    """per_request_tokens_per_s (see the module docstring)."""
    tokens = time_s = 0.0
    speeds: list[float] = []
    for r in records:
        d = r.decode_interval()
        if d is None:
            continue
        tokens += d[0]
        time_s += d[1]
        speeds.append(d[0] / d[1])
    out = distribution(speeds, points=(50,), spread=False)
    out["mean"] = round(tokens / time_s, 3) if time_s > 0 else None
    out["requests"] = len(speeds)
    out["definition"] = "decode_tokens_over_decode_time"
    return out


def goodput_of(records: Sequence[RequestRecord], slos_ms: dict[str, float], duration: float) -> dict[str, Any]:
    """bench_serving's goodput (sglang/benchmark/goodput.py): a single-token answer's TPOT counts as 0."""
    good = 0
    met = dict.fromkeys(slos_ms, 0)
    for r in records:
        if not r.ok:
            continue
        observed = {"ttft": (r.ttft or 0.0) * 1000, "tpot": (r.tpot or 0.0) * 1000, "e2el": (r.e2e or 0.0) * 1000}
        hits = [name for name, slo in slos_ms.items() if observed[name] <= slo]
        for name in hits:
            met[name] += 1
        good += len(hits) == len(slos_ms)
    n = len(records)
    return {"goodput_slos_ms": dict(slos_ms),
            "request_goodput": round(good / duration, 4) if duration > 0 else None,
            "slo_attainment": round(good / n, 4) if n else None,
            "slo_attainment_by_metric": {k: (round(v / n, 4) if n else None) for k, v in met.items()}}


def itl_tokens_source(records: Iterable[RequestRecord]) -> str | None:
    sources = {r.token_counts()[1] for r in records if len(r.chunk_times) > 1}
    return (sources.pop() if len(sources) == 1 else "mixed") if sources else None


def error_counts(records: Iterable[RequestRecord]) -> dict[str, int]:
    return dict(Counter(r.error for r in records if r.error is not None).most_common())


def is_speculative(records: Iterable[RequestRecord], declared: bool | None) -> bool | None:
    """The caller's word (from /server_info) wins; else True when a response showed verify rounds or a
    chunk carried more than one token; else None (not known)."""
    if declared is not None:
        return declared
    for r in records:
        if r.spec.verify_ct or any((n or 0) > 1 for n in r.chunk_tokens):
            return True
    return None


def peak_tokens_per_s(records: Sequence[RequestRecord], window_start: float, window_end: float,
                      speculative: bool | None) -> float | None:
    if speculative or window_end <= window_start:
        return None
    buckets: Counter[int] = Counter()
    for r in records:
        if not r.ok:
            continue
        for t, n in zip(r.chunk_times, r.chunk_tokens, strict=True):
            if n is None and speculative is None:
                return None  # unknown tokens per chunk and speculation not ruled out
            buckets[int(t - window_start)] += 1 if n is None else n
    return float(max(buckets.values())) if buckets else None


def summarize(records: Sequence[RequestRecord], window_start: float, window_end: float, *,
              speculative: bool | None = None, goodput: dict[str, float] | None = None) -> dict[str, Any]:
    """The contract's figures for the measured records (see the module docstring)."""
    ok = [r for r in records if r.ok]
    duration = max(0.0, window_end - window_start)
    tokens = sum(r.output_tokens or 0 for r in ok)
    inputs = [r.prompt_tokens if r.prompt_tokens is not None else r.expected_input_tokens for r in ok]
    input_tokens = sum(x or 0 for x in inputs) if ok and all(x is not None for x in inputs) else None
    sources = {r.output_tokens_source for r in ok}
    spec = is_speculative(records, speculative)

    def per_s(x: float | None) -> float | None:
        return round(x / duration, 3) if x is not None and duration > 0 and ok else None

    out = {
        "requests": {"ok": len(ok), "failed": len(records) - len(ok), "errors": error_counts(records)},
        "duration_s": round(duration, 4),
        "output_tokens": tokens,
        "output_tokens_per_s": per_s(tokens),
        "input_tokens": input_tokens,
        "input_tokens_per_s": per_s(input_tokens),
        "total_tokens_per_s": per_s(None if input_tokens is None else input_tokens + tokens),
        "requests_per_s": per_s(len(ok)),
        "concurrency": round(math.fsum(r.e2e or 0.0 for r in ok) / duration, 3) if duration > 0 and ok else None,
        "per_request_tokens_per_s": decode_speed(ok),
        "ttft_ms": distribution((r.ttft for r in ok if r.ttft is not None), scale=1000.0),
        "tpot_ms": distribution((x for r in ok if (x := r.tpot) is not None), scale=1000.0),
        "itl_ms": distribution((g for r in ok for g in r.itls), scale=1000.0),
        "chunk_gap_ms": distribution((g for r in ok for g in r.chunk_gaps), scale=1000.0),
        "itl_tokens_source": itl_tokens_source(ok),
        "e2e_ms": distribution((r.e2e for r in ok if r.e2e is not None), scale=1000.0),
        "speculative": spec,
        "peak_output_tokens_per_s": peak_tokens_per_s(ok, window_start, window_end, spec),
        "output_tokens_source": (sources.pop() if len(sources) == 1 else "mixed") if sources else None,
    }
    if goodput:
        out["goodput"] = goodput_of(records, goodput, duration)
    return out
