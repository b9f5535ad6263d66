"""The load generator against the real simulator (`python -m spectui.sim`, EAGLE3, time scale 50)."""

from __future__ import annotations

import statistics
import subprocess
import sys

import pytest
from load_kit import free_port, run_sim, wait_http

from spectui.load import (
    BenchConfig,
    NotOpenAIServerError,
    Progress,
    ServerUnreachableError,
    load_prompts,
    run_bench,
)

pytestmark = pytest.mark.timeout(60)


async def test_small_bench_figures_are_consistent(sim_url: str) -> None:
    progress: list[Progress] = []
    cfg = BenchConfig(sim_url, requests=12, concurrency=3, warmup=2, max_tokens=48)
    res = await run_bench(cfg, load_prompts("mixed"), on_progress=progress.append, progress_interval_s=0.01)
    assert res.server.model == "m"
    assert len(res.warmup_records) == 2 and all(r.warmup for r in res.warmup_records)
    assert [r.index for r in res.records] == list(range(12)) and not any(r.warmup for r in res.records)
    assert all(r.ok for r in res.records)
    assert all(r.endpoint == "chat" for r in res.records)

    out = res.to_json()
    assert out["requests"] == {"ok": 12, "failed": 0, "errors": {}, "not_sent": 0, "cancelled": 0}
    assert out["workload"]["concurrency"] == 3 and out["workload"]["requests"] == 12
    tokens = sum(r.output_tokens for r in res.records)
    assert tokens == out["output_tokens"] == 12 * 48  # the sim always generates max_tokens
    window = res.window_end - res.window_start
    assert res.window_start <= min(r.start for r in res.records)
    assert res.window_end == max(r.end for r in res.records)
    assert out["duration_s"] == pytest.approx(window, abs=1e-4)
    assert out["output_tokens_per_s"] == pytest.approx(tokens / window, rel=1e-6)
    assert out["window"]["end"] - out["window"]["start"] == pytest.approx(window, abs=1e-5)  # float wall clock

    for r in res.records:
        assert r.output_tokens_source == "usage"
        assert r.start < r.first_token == r.chunk_times[0] <= r.chunk_times[-1] <= r.end
        assert r.ttft == pytest.approx(r.first_token - r.start)
        assert r.tpot * (r.output_tokens - 1) == pytest.approx(r.e2e - r.ttft)
        span = r.chunk_times[-1] - r.chunk_times[0]
        if span > 0:  # the simulator reports no per-chunk counts: the first chunk is taken as 1 token
            assert r.decode_tokens_per_s == pytest.approx((r.output_tokens - 1) / span)
        else:  # the whole stream arrived in one read (a fast simulator): no decode time to divide by
            assert r.decode_tokens_per_s is None
        assert sum(r.itls) == pytest.approx(r.chunk_times[-1] - r.chunk_times[0])
        assert len(r.chunk_times) < r.output_tokens  # speculation: chunks carry several tokens
    ttfts = sorted(r.ttft * 1000 for r in res.records)
    assert out["ttft_ms"]["mean"] == pytest.approx(sum(ttfts) / 12, abs=1e-3)
    assert out["ttft_ms"]["p50"] == pytest.approx((ttfts[5] + ttfts[6]) / 2, abs=1e-3)
    decode = [r.decode_tokens_per_s for r in res.records if r.decode_tokens_per_s is not None]
    assert decode and out["per_request_tokens_per_s"]["p50"] == pytest.approx(statistics.median(decode), abs=1e-3)
    assert all(v is not None for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms") for v in out[k].values())

    final = progress[-1]
    assert final.phase == "done" and final.ok == 12 and final.failed == 0 and final.in_flight == 0
    assert final.output_tokens == tokens
    assert any(p.phase == "warmup" for p in progress)
    assert all(p.in_flight <= 3 for p in progress)


async def test_duration_with_poisson_arrivals(sim_url: str) -> None:
    cfg = BenchConfig(sim_url, duration_s=0.6, rate=30.0, concurrency=2, warmup=0, max_tokens=16, seed=7)
    res = await run_bench(cfg, load_prompts("math"))
    assert res.records and all(r.ok for r in res.records)
    assert all(r.start <= res.window_start + 0.6 + 0.01 for r in res.records)  # none starts after S
    assert res.window_end - res.window_start >= max(r.start for r in res.records) - res.window_start
    out = res.to_json()
    assert out["workload"]["requests"] is None and out["workload"]["duration_limit_s"] == 0.6
    assert out["requests"]["ok"] == len(res.records)
    assert 3 <= len(res.records) + res.not_sent <= 60  # ~18 arrivals expected in 0.6 s at 30/s
    starts = [r.start for r in res.records]
    assert starts == sorted(starts)


async def test_crashing_server_gives_counted_failures_not_a_crash() -> None:
    with run_sim("--sim-fault", "crash-after", "3") as url:
        cfg = BenchConfig(url, requests=8, concurrency=1, warmup=0, max_tokens=16)
        res = await run_bench(cfg, load_prompts("code"))
    out = res.to_json()
    assert out["requests"]["ok"] == 3 and out["requests"]["failed"] == 5
    errors = out["requests"]["errors"]
    assert sum(errors.values()) == 5
    assert set(errors) <= {"IncompleteStream", "ConnectError", "RemoteProtocolError", "ReadError"}
    assert errors.get("ConnectError", 0) >= 3  # the server is gone for the last ones
    assert out["output_tokens"] == 3 * 16
    assert out["output_tokens_per_s"] == pytest.approx(48 / res.duration_s, rel=1e-3)
    assert all(r.ok for r in res.records[:3]) and not any(r.ok for r in res.records[3:])


async def test_unreachable_port_is_a_clear_early_error() -> None:
    port = free_port()
    with pytest.raises(ServerUnreachableError, match=rf"cannot connect to http://127.0.0.1:{port} "
                                                     r"\(connection refused\)") as info:
        await run_bench(BenchConfig(f"127.0.0.1:{port}", requests=1), load_prompts("chat"))
    assert info.value.exit_code == 1


async def test_plain_http_server_is_not_an_openai_server(tmp_path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc)
        with pytest.raises(NotOpenAIServerError, match=r"/v1/models answered HTTP 404: not an OpenAI-compatible"):
            await run_bench(BenchConfig(f"http://127.0.0.1:{port}/v1", requests=1), load_prompts("chat"))
    finally:
        proc.terminate()
        proc.wait(5)


async def test_the_simulator_reports_the_tokens_of_every_chunk(sim_url: str) -> None:
    """As SGLang with stream_options.continuous_usage_stats: the usage so far on every chunk, so ITL splits each
    verify round's gap over the tokens it really carried (not an estimate)."""
    res = await run_bench(BenchConfig(sim_url, requests=4, concurrency=2, warmup=0, max_tokens=24), load_prompts("chat"))
    assert res.to_json()["itl_tokens_source"] == "server"
    for r in res.records:
        counts, source = r.token_counts()
        assert source == "server" and sum(counts) == r.output_tokens == 24 and counts[0] == 1
    assert max(max(r.token_counts()[0]) for r in res.records) > 1  # EAGLE3: a chunk carries a verify round
