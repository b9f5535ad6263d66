"""The load generator is never the bottleneck: streamed tokens/s that spectui.load consumes on one core
against the simulator, and CPU seconds per 1k tokens, against an independent client on the same simulator in
the same run — the official `openai` Python client (AsyncOpenAI, streaming chat completions) in an asyncio
loop, same prompts, concurrency and max_tokens. Their tok/s for the same workload should agree within 3 %.

    pip install openai
    python perf/perf_bench.py [--requests 200] [--concurrency 16] [--max-tokens 256] [--time-scale 1000]

The simulator runs speculation-free with a high time scale so that the server is fast and the client side
dominates; each tool runs twice, alternating, and the better of the two is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sim(port: int, time_scale: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", "--model-path", "m", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "SPECTUI_SIM_TIME_SCALE": f"{time_scale:g}"})
    for _ in range(400):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, trust_env=False).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit("simulator did not start")


async def spectui_run(url: str, n: int, conc: int, max_tokens: int) -> tuple[int, float, float]:
    from spectui.load import BenchConfig, load_prompts, run_bench

    cfg = BenchConfig(url, requests=n, concurrency=conc, max_tokens=max_tokens, warmup=0)
    cpu0, t0 = time.process_time(), time.perf_counter()
    res = await run_bench(cfg, load_prompts("mixed"))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return int(res.to_json()["output_tokens"]), wall, cpu


async def openai_run(url: str, n: int, conc: int, max_tokens: int) -> tuple[int, float, float]:
    from openai import AsyncOpenAI

    from spectui.load import load_prompts

    prompts = load_prompts("mixed")
    items = list(getattr(prompts, "items", None) or getattr(prompts, "prompts", []))
    client = AsyncOpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)
    sem = asyncio.Semaphore(conc)
    tokens = 0

    def messages(i: int) -> list[dict]:
        p = items[i % len(items)] if items else "Hello"
        msgs = getattr(p, "messages", None)
        if msgs:
            return list(msgs)
        return [{"role": "user", "content": getattr(p, "prompt", None) or str(p)}]

    async def one(i: int) -> None:
        nonlocal tokens
        async with sem:
            stream = await client.chat.completions.create(model="m", messages=messages(i), max_tokens=max_tokens,
                                                          temperature=0.0, stream=True,
                                                          stream_options={"include_usage": True})
            async for chunk in stream:
                if chunk.usage is not None:
                    tokens += chunk.usage.completion_tokens

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await client.close()
    return tokens, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--time-scale", type=float, default=1000.0)
    a = ap.parse_args()
    port = free_port()
    proc = start_sim(port, a.time_scale)
    url = f"http://127.0.0.1:{port}"
    best: dict[str, tuple[int, float, float]] = {}
    try:
        for _ in range(2):
            for name, fn in (("spectui.load", spectui_run), ("openai", openai_run)):
                r = asyncio.run(fn(url, a.requests, a.concurrency, a.max_tokens))
                if name not in best or r[0] / r[1] > best[name][0] / best[name][1]:
                    best[name] = r
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"workload: {a.requests} requests, concurrency {a.concurrency}, max_tokens {a.max_tokens}, "
          f"simulator time scale {a.time_scale:g}")
    for name, (tok, wall, cpu) in best.items():
        print(f"{name:13s} {tok:7d} tokens in {wall:6.2f} s: {tok / wall:9.0f} tok/s, client CPU "
              f"{cpu:5.2f} s = {1e6 * cpu / tok:6.1f} ms per 1k tokens ({cpu / wall:.0%} of a core)")
    (t1, w1, _), (t2, w2, _) = best["spectui.load"], best["openai"]
    print(f"tok/s spectui.load / openai = {(t1 / w1) / (t2 / w2):.3f} (agree within 3 %: "
          f"{abs((t1 / w1) / (t2 / w2) - 1) <= 0.03})")


if __name__ == "__main__":
    main()
