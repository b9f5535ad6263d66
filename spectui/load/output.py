"""`--output-file`: one JSON line per run, appended, readable next to bench_serving's own `--output-file`
lines: the same key names for the same figures (`output_throughput`, `median_ttft_ms`, `p99_itl_ms`, …,
with bench_serving's meaning, ITL included), `backend: "spectui"`, and the whole `spectui bench --json`
object under `spectui`. With per-request details (`--output-details`) the line also holds bench_serving's
`input_lens`, `output_lens`, `ttfts` and `itls` (seconds, per request) and `errors`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STATS = (("mean", "mean"), ("median", "p50"), ("std", "std"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"),
         ("max", "max"))
METRICS = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("itl", "itl_ms"), ("e2e_latency", "e2e_ms"))


def bench_serving_line(out: dict[str, Any], *, dataset: dict[str, Any] | None = None) -> dict[str, Any]:
    """The bench_serving-named figures of a `spectui bench --json` object (plus it, under `spectui`)."""
    wl, req = out.get("workload") or {}, out.get("requests") or {}
    ds = dataset or {}
    line: dict[str, Any] = {
        "tag": None, "backend": "spectui", "dataset_name": ds.get("dataset_name", wl.get("prompts")),
        "request_rate": wl.get("rate") if wl.get("rate") is not None else float("inf"),
        "max_concurrency": wl.get("concurrency"),
        "sharegpt_output_len": ds.get("sharegpt_output_len"), "random_input_len": ds.get("random_input_len"),
        "random_output_len": ds.get("random_output_len"), "random_range_ratio": ds.get("random_range_ratio"),
        **{k: v for k, v in ds.items() if k.startswith("gsp_")},  # generated-shared-prefix's (multi-turn's)
        "duration": out.get("duration_s"), "completed": req.get("ok"),
        "total_input_tokens": out.get("input_tokens"), "total_output_tokens": out.get("output_tokens"),
        "request_throughput": out.get("requests_per_s"), "input_throughput": out.get("input_tokens_per_s"),
        "output_throughput": out.get("output_tokens_per_s"), "total_throughput": out.get("total_tokens_per_s"),
    }
    for name, key in METRICS:
        dist = out.get(key) or {}
        for prefix, field in STATS:
            if field in dist:
                line[f"{prefix}_{name}_ms"] = dist[field]
    spec = out.get("spec") or {}
    line.update({"concurrency": out.get("concurrency"), "accept_length": spec.get("accept_len"),
                 "max_output_tokens_per_s": out.get("peak_output_tokens_per_s")})
    if out.get("goodput"):
        line.update(out["goodput"])
    per = out.get("per_request")
    if per is not None:
        line.update({"input_lens": [r.get("prompt_tokens") for r in per],
                     "output_lens": [r.get("output_tokens") if r.get("ok") else 0 for r in per],
                     "ttfts": [None if r.get("ttft_ms") is None else r["ttft_ms"] / 1000 for r in per],
                     "itls": [r.get("itls") or [] for r in per],
                     "errors": [r.get("error_detail") or r.get("error") for r in per]})
    line["spectui"] = out
    return line


def append_line(path: str, line: dict[str, Any]) -> None:
    """Append one JSON line (bench_serving appends too); OSError for the caller to report."""
    target = Path(path).expanduser()
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
