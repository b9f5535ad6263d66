"""Benchmark the simulator the way a user would: a streaming client's tok/s against the tok/s in the log.

Usage: python perf/perf_sim.py [--requests 3] [--tokens 200]
For the seed incident's three launches (no speculation, topk 1 / 16 draft tokens / 1 step, and 15 steps)
it starts `python -m spectui.sim` at time scale 1 (real time), streams requests one at a time with httpx,
and prints the client-measured tok/s, the mean `gen throughput` and `accept len` of the Decode lines,
and the ratio client / log (1.00 = a benchmark client sees what the log says).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from spectui.core.log import DecodeSample, LogParser

BASE = ["--model-path", "/models/Kimi-K2.5", "--decode-log-interval", "10"]
SPEC = [*BASE, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/eagle3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16"]
CONFIGS = {"no speculation": BASE, "seed: steps 1": [*SPEC, "--speculative-num-steps", "1"],
           "fix: steps 15": [*SPEC, "--speculative-num-steps", "15"]}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(flags: list[str], requests: int, tokens: int) -> tuple[float, float, float | None]:
    port = _port()
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *flags, "--port", str(port),
                                 "--sim-time-scale", "1"], stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while "ready to roll" not in log.read_text():
            if proc.poll() is not None:
                raise SystemExit(log.read_text()[-2000:])
            time.sleep(0.1)
        rates = []
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as c:
            for _ in range(requests):
                n, first_n, first = 0, 0, 0.0
                body = {"prompt": "x", "max_tokens": tokens, "stream": True}
                with c.stream("POST", "/v1/completions", json=body) as r:
                    for line in r.iter_lines():
                        if line.startswith("data: {"):
                            n += len(line.split('"text": "', 1)[1].split('"', 1)[0].split())
                            if not first:  # time from the first chunk: prefill is not decode speed
                                first, first_n = time.perf_counter(), n
                rates.append((n - first_n) / (time.perf_counter() - first))
        parser = LogParser()
        decodes = [r for r in parser.feed(log.read_text().splitlines()) if isinstance(r, DecodeSample)]
        log_tps = statistics.mean(d.gen_tokens_per_s for d in decodes)  # type: ignore[misc]
        accepts = [d.accept_len for d in decodes if d.accept_len is not None]
        return statistics.mean(rates), log_tps, statistics.mean(accepts) if accepts else None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        log.unlink()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=200)
    a = ap.parse_args()
    print(f"{'launch':16} {'client tok/s':>12} {'log tok/s':>10} {'accept len':>10} {'client/log':>10}")
    for name, flags in CONFIGS.items():
        client, logged, accept = run(flags, a.requests, a.tokens)
        acc = f"{accept:.2f}" if accept is not None else "-"
        print(f"{name:16} {client:12.1f} {logged:10.1f} {acc:>10} {client / logged:10.2f}")


if __name__ == "__main__":
    main()
