"""Summary statistics of a bench run, defined as SGLang's bench_serving `calculate_metrics` defines them.

  output_tokens          sum of usage.completion_tokens over successful requests (failed ones count 0)
  duration_s             the measured window: first measured request sent -> last one finished
  output_tokens_per_s    output_tokens / duration_s (bench_serving `output_throughput`)
  ttft_ms                per successful request: first generated-text chunk - start
  tpot_ms                per successful request with output_tokens > 1: (e2e - ttft) / (output_tokens - 1)
  itl_ms                 pooled over successful requests: gaps between consecutive text chunks
  e2e_ms                 per successful request: end of stream - start
  per_request_tokens_per_s  per request (output_tokens - 1) / (e2e - ttft) = 1 / TPOT: decode speed
Percentiles interpolate linearly between order statistics (numpy.percentile's default); p50 is the
median. A distribution over no values is null (bench_serving would print 0).

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

from spectui.load.client import RequestRecord


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """numpy.percentile(values, p) with the default 'linear' method; `sorted_values` must be sorted."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no values")
    k = (n - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def distribution(values: Iterable[float], *, scale: float = 1.0, points: Sequence[int] = (50, 90, 99),
                 digits: int = 3) -> dict[str, float | None]:
    xs = sorted(v * scale for v in values)
    keys = ["mean", *(f"p{p}" for p in points)]
    if not xs:
        return dict.fromkeys(keys)
    out: dict[str, float | None] = {"mean": round(math.fsum(xs) / len(xs), digits)}
    for p in points:
        out[f"p{p}"] = round(percentile(xs, p), digits)
    return out


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
              speculative: bool | None = None) -> dict[str, Any]:
    """The contract's figures for the measured records (see the module docstring)."""
    ok = [r for r in records if r.ok]
    duration = max(0.0, window_end - window_start)
    tokens = sum(r.output_tokens or 0 for r in ok)
    decode = [x for r in ok if (x := r.decode_tokens_per_s) is not None]
    sources = {r.output_tokens_source for r in ok}
    spec = is_speculative(records, speculative)
    return {
        "requests": {"ok": len(ok), "failed": len(records) - len(ok), "errors": error_counts(records)},
        "duration_s": round(duration, 4),
        "output_tokens": tokens,
        "output_tokens_per_s": round(tokens / duration, 3) if duration > 0 and ok else None,
        "per_request_tokens_per_s": distribution(decode, points=(50,)),
        "ttft_ms": distribution((r.ttft for r in ok if r.ttft is not None), scale=1000.0),
        "tpot_ms": distribution((x for r in ok if (x := r.tpot) is not None), scale=1000.0),
        "itl_ms": distribution((g for r in ok for g in r.itls), scale=1000.0),
        "e2e_ms": distribution((r.e2e for r in ok if r.e2e is not None), scale=1000.0),
        "speculative": spec,
        "peak_output_tokens_per_s": peak_tokens_per_s(ok, window_start, window_end, spec),
        "output_tokens_source": (sources.pop() if len(sources) == 1 else "mixed") if sources else None,
    }
