"""#23/#25: one clock. `--sim-time-scale X` is a GPU X times faster: a round's tokens arrive only once its
time has passed, and the log's tok/s is what a client measures over the same window (wall clock).

Expected times come from docs/SIMULATOR.md §2, computed here (not read from the model): T1 = 1/90 s; a
3/1/4 chain round at B = 1 is (1 + 3 (1/256 + 0.026) + 3 * 0.05 + 1.46) T1 = 2.6997 T1 = 30.0 ms; the
prefill costs at least 15 ms."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest

from spectui.sim.engine import Engine
from spectui.sim.logfmt import LogFormat
from spectui.sim.model import DecodeModel, SpecConfig
from tests.sim.conftest import CHAIN3, EAGLE3

T1 = 1 / 90
ROUND_314 = (1 + 3 * (1 / 256 + 0.026) + 3 * 0.05 + 1.46) * T1  # 30.0 ms
PREFILL_MIN = 0.015
E_L_314 = 1 + 0.8 + 0.8 * (0.8 * 0.97) + 0.8 * (0.8 * 0.97) * (0.8 * 0.97 ** 2)  # a1 0.8, r 0.97, k 3
GEN = re.compile(r"Decode batch.*gen throughput \(token/s\): ([0-9.]+)")


def test_the_constants_here_are_the_documented_ones() -> None:
    assert pytest.approx(0.0300, abs=0.0001) == ROUND_314 and pytest.approx(2.888, abs=0.001) == E_L_314


async def _arrivals(scale: float, max_tokens: int) -> tuple[list[float], list[int]]:
    model = DecodeModel(90.0, 0.8, SpecConfig(3, 1, 4))
    engine = Engine(model=model, fmt=LogFormat("0.5.23"), write=lambda _line: None, max_running=48,
                    max_total_tokens=100000, decode_log_interval=40, graph_max_bs=48, time_scale=scale)
    task = asyncio.create_task(engine.run())
    try:
        await asyncio.sleep(0.05)  # idle: the engine waits for work
        start = time.monotonic()
        req = engine.submit(16, max_tokens)
        times, sizes = [], []
        while (chunk := await asyncio.wait_for(req.chunks.get(), 10)) is not None:
            times.append(time.monotonic() - start)
            sizes.append(len(chunk))
        return times, sizes
    finally:
        task.cancel()


def test_a_rounds_tokens_arrive_when_its_time_has_passed_not_at_its_start() -> None:
    """On an idle simulator at scale 1 a 4-token answer took 1.4 ms: every token was handed out when the
    round began. The first token is the prefill's (>= 15 ms), each further chunk one round (30 ms) later."""
    times, sizes = asyncio.run(_arrivals(1.0, 4))
    assert sum(sizes) == 4 and sizes[0] == 1
    assert times[0] >= PREFILL_MIN * 0.95
    for i, t in enumerate(times[1:], start=1):  # round i ends at prefill + i rounds at the earliest
        assert t >= (PREFILL_MIN + i * ROUND_314) * 0.95, (i, times)
    assert times[-1] < PREFILL_MIN + len(times) * ROUND_314 + 0.15  # and not much later (loop jitter)
    # The scale divides every one of those times: at scale 10 the same answer takes a tenth.
    fast, _ = asyncio.run(_arrivals(10.0, 4))
    assert (PREFILL_MIN + ROUND_314) / 10 * 0.95 <= fast[-1] < times[-1]


def test_the_logs_tok_s_is_what_a_client_measures(sim_factory) -> None:
    """At scale 4 (the demo's) a client streaming one request measures the tok/s the log reports over the
    same window, and both are 4 x the model's (at scale 1 the log said 63.6 while bench measured 252.6)."""
    scale = 4.0
    sim = sim_factory([*EAGLE3, *CHAIN3, "--decode-log-interval", "10", "--sim-time-scale", str(scale)])
    sim.wait_ready()
    with httpx.Client(timeout=60) as client:
        stamps: list[tuple[float, int]] = []
        with client.stream("POST", f"{sim.url}/generate", json={
                "text": "hello", "stream": True, "sampling_params": {"max_new_tokens": 500}}) as resp:
            seen = 0
            for line in resp.iter_lines():
                if not line.startswith("data:") or line.strip() == "data: [DONE]":
                    continue
                done = json.loads(line[5:])["meta_info"]["completion_tokens"]
                if done > seen:
                    stamps.append((time.monotonic(), done))
                    seen = done
        info = client.get(f"{sim.url}/server_info").json()
    (t0, n0), (t1, n1) = stamps[0], stamps[-1]
    client_tps = (n1 - n0) / (t1 - t0)  # decode only: after the prefill's first token
    logged = [float(x) for x in GEN.findall(sim.text())]
    assert len(logged) >= 10
    log_tps = sum(logged) / len(logged)
    model_tps = E_L_314 / ROUND_314  # 96 tok/s at scale 1
    assert log_tps == pytest.approx(model_tps * scale, rel=0.15), (log_tps, model_tps)
    assert client_tps == pytest.approx(log_tps, rel=0.15), (client_tps, log_tps)
    assert info["internal_states"][0]["last_gen_throughput"] == pytest.approx(logged[-1], abs=0.01)
