"""A synthetic exporter of SGLang's metric families for N instances, for a real Prometheus to scrape.

    python3 perf/fleetbed/exporter.py --instances 10000 [--port P] [--down-every K]

Prints its port on the first line of stdout, then serves:
  /metrics?target=ADDR   one SGLang server's /metrics (ADDR one of the instance addresses below): what a
                         Prometheus scrape job gets when it relabels ADDR into `__param_target` and points
                         `__address__` at this exporter (the blackbox-exporter pattern), so every instance is
                         its own scrape target with its own `up`. Every K-th instance answers 503 (down).
  /metrics?all=1         every instance's series in one page, each with an `instance` label (a federation /
                         `honor_labels: true` setup: no `up` per instance).
  /metrics               the exporter's own metrics: no SGLang family (its target is not an SGLang server).

Instances (deterministic from their index i): `10.H1.H2.H3:300PP`, eight servers per host; SGLang release
0.5.6 / 0.5.16 / 0.5.23 (0.5.16+ spelled `sglang_NAME`, older `sglang:NAME`: both spellings a real scrape
stores); 70 % one DP rank, 20 % two, 10 % four (`dp_rank` label); four models; EAGLE3 (3 steps, 4 draft
tokens), NGRAM (0 steps, 4 draft tokens) or no speculation; a few with low acceptance or a queue that does
not drain. Per DP rank the scheduler gauges docs/REFERENCE.md §4.3 lists (and the simulator's promtext.py writes);
per instance the tokenizer counters and a time-to-first-token histogram. Values move every 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from urllib.parse import parse_qs, unquote, urlsplit

MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3", "google/gemma-3-27b-it")
VERSIONS = ((0, 5, 6), (0, 5, 16), (0, 5, 23))
TTFT_BUCKETS = ("0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "+Inf")


def address(i: int) -> str:
    """The instance label of the i-th server (0-based): eight SGLang servers per host, ports 30000-30007."""
    host = i // 8 + 1
    return f"10.{(host >> 16) & 255}.{(host >> 8) & 255}.{host & 255}:{30000 + i % 8}"


def index_of(addr: str) -> int | None:
    try:
        hostpart, port = addr.rsplit(":", 1)
        a, b, c, d = (int(x) for x in hostpart.split("."))
        p = int(port) - 30000
    except ValueError:
        return None
    if a != 10 or not 0 <= p < 8:
        return None
    return ((b << 16) + (c << 8) + d - 1) * 8 + p


def _noise(i: int, t: int, salt: int = 0) -> float:
    """0..1, cheap and deterministic per (instance, 5 s tick)."""
    return (((i * 2654435761) ^ (t * 40503) ^ (salt * 97)) & 0xFFFF) / 65536.0


class Profile:
    __slots__ = ("draft", "dp", "i", "low", "model", "prefix", "queued", "spec", "steps", "version")

    def __init__(self, i: int) -> None:
        self.i = i
        self.version = VERSIONS[i % 3]
        self.prefix = "sglang_" if self.version >= (0, 5, 16) else "sglang:"
        r = (i * 7919) % 10
        self.dp = 1 if r < 7 else (2 if r < 9 else 4)
        self.model = MODELS[(i // 8) % len(MODELS)]
        kind = (i * 31) % 10
        self.spec = "EAGLE3" if kind < 5 else ("NGRAM" if kind == 5 else None)
        self.steps, self.draft = {"EAGLE3": (3, 4), "NGRAM": (0, 4), None: (0, 0)}[self.spec]
        self.low = self.spec is not None and i % 37 == 5  # a draft that barely helps
        self.queued = i % 23 == 7  # a queue that never drains


def render(p: Profile, now: float, *, instance: str | None = None) -> str:
    """One server's /metrics text (Prometheus text format 0.0.4)."""
    t = int(now // 5)
    i, pre = p.i, p.prefix
    extra = f'instance="{instance}",' if instance else ""
    base = f'{extra}engine_type="unified",model_name="{p.model}",pp_rank="0"'
    if p.version >= (0, 5, 16):
        base += ',moe_ep_rank="0"'
    out: list[str] = []
    gauges: dict[str, list[str]] = {}
    for rank in range(p.dp):
        labels = "{" + base + (f',dp_rank="{rank}"' if p.dp > 1 else "") + f',tp_rank="{rank * 2 if p.dp > 1 else 0}"' + "}"
        n = _noise(i, t, rank)
        running = 0 if p.queued is False and n < 0.05 else int(4 + 40 * n)
        queue = int(5 + 20 * n) if p.queued else (1 if n > 0.9 else 0)
        if p.spec:
            accept = (1.05 + 0.3 * n) if p.low else (2.4 + 1.2 * n if p.spec == "EAGLE3" else 1.6 + 0.8 * n)
            rate = (accept - 1) / max(1, (p.steps or p.draft - 1))
        else:
            accept, rate = 0.0, 0.0
        values = {"num_running_reqs": running, "num_queue_reqs": queue, "num_used_tokens": running * 900,
                  "token_usage": round(0.1 + 0.8 * n, 4), "gen_throughput": round(running * (12 + 30 * n), 2),
                  "cache_hit_rate": round(0.3 * n, 4), "spec_accept_length": round(accept, 4)}
        if p.version >= (0, 5, 4):
            values["spec_accept_rate"] = round(min(1.0, rate), 4)
            values["is_cuda_graph"] = 1
        if p.version >= (0, 5, 6):
            values["max_total_num_tokens"] = 400000
        if p.version >= (0, 5, 15) and p.spec:
            values["spec_num_steps"] = p.steps
            values["spec_num_draft_tokens"] = p.draft
        for name, value in values.items():
            gauges.setdefault(name, []).append(f"{pre}{name}{labels} {value}")
    for name, lines in gauges.items():
        out.append(f"# HELP {pre}{name} {name.replace('_', ' ')}.\n# TYPE {pre}{name} gauge")
        out.extend(lines)
    tok = "{" + f'{extra}engine_type="unified",model_name="{p.model}"' + "}"
    served = 1000 * (t + i % 1000)
    for name, value in (("prompt_tokens", served * 3), ("generation_tokens", served), ("num_requests", served // 200)):
        out.append(f"# HELP {pre}{name}_total {name}.\n# TYPE {pre}{name}_total counter")
        out.append(f"{pre}{name}_total{tok} {value}")
    out.append(f"# HELP {pre}time_to_first_token_seconds ttft.\n# TYPE {pre}time_to_first_token_seconds histogram")
    count = served // 200
    lab = f'{extra}engine_type="unified",model_name="{p.model}"'
    for k, le in enumerate(TTFT_BUCKETS):
        out.append(f'{pre}time_to_first_token_seconds_bucket{{{lab},le="{le}"}} {count * (k + 1) // len(TTFT_BUCKETS)}')
    out.append(f"{pre}time_to_first_token_seconds_sum{{{lab}}} {count * 0.4:.1f}")
    out.append(f"{pre}time_to_first_token_seconds_count{{{lab}}} {count}")
    return "\n".join(out) + "\n"


class Exporter:
    def __init__(self, n: int, down_every: int) -> None:
        self.n, self.down_every = n, down_every
        self.profiles = [Profile(i) for i in range(n)]
        self.scrapes = 0
        self.started = time.time()

    def is_down(self, i: int) -> bool:
        return self.down_every > 0 and i % self.down_every == self.down_every - 1

    def answer(self, target: str) -> tuple[int, bytes]:
        parts = urlsplit(target)
        if parts.path != "/metrics":
            return 404, b"not found\n"
        query = parse_qs(parts.query)
        now = time.time()
        self.scrapes += 1
        if "target" in query:
            i = index_of(unquote(query["target"][0]))
            if i is None or i >= self.n:
                return 404, b"unknown target\n"
            if self.is_down(i):
                return 503, b"server is restarting\n"
            return 200, render(self.profiles[i], now).encode()
        if "all" in query:
            return 200, "".join(render(p, now, instance=address(p.i)) for p in self.profiles
                                if not self.is_down(p.i)).encode()
        own = (f"# TYPE fleetbed_scrapes_total counter\nfleetbed_scrapes_total {self.scrapes}\n"
               f"# TYPE fleetbed_instances gauge\nfleetbed_instances {self.n}\n"
               f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {self.started:.3f}\n")
        return 200, own.encode()


class _Http(asyncio.Protocol):
    """HTTP/1.1 GET with keep-alive, no body: all a Prometheus scrape sends."""

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            status, body = (405, b"") if len(line) < 2 or line[0] != "GET" else self.exporter.answer(line[1])
            reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}[status]
            assert self.transport is not None
            self.transport.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; version=0.0.4; "
                                 f"charset=utf-8\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)


async def serve(n: int, port: int, down_every: int, host: str = "127.0.0.1") -> None:
    exporter = Exporter(n, down_every)
    server = await asyncio.get_running_loop().create_server(lambda: _Http(exporter), host, port, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--down-every", type=int, default=200, help="every K-th instance answers 503 (0: none)")
    args = ap.parse_args(argv)
    if args.instances < 1:
        print("exporter: --instances must be >= 1", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.instances, args.port, args.down_every))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
