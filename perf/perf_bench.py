"""spectui's bench beside SGLang's own bench_serving, in the same run, against the simulator: the same
prompts, output length and concurrency, runs interleaved (A B A B ...), best-of-N by output tok/s reported,
and the ratios spectui / bench_serving printed for output tok/s, request/s, TTFT, TPOT, ITL, E2E p50 and
the accept length, plus the client CPU per 1k tokens.

Two regimes: server-bound (the simulator at a low time scale: its rounds take milliseconds, the client
idles) and client-bound (a high time scale at concurrency 32: the server answers as fast as it can and
what the client adds shows). Optionally `--old REV` also runs spectui's load generator as it was at a git
revision (extracted with `git archive` into a temporary folder, e.g. the httpx client before aiohttp).

bench_serving runs from /work/shared/bench-peer (its README), in its own venv (created on first use, under
/tmp: aiohttp msgspec orjson numpy requests tqdm transformers tokenizers pybase64 pillow psutil). Its code is
run from there, never copied here.

    python perf/perf_bench.py [--requests 64] [--max-tokens 64] [--repeats 2] [--old d8883b8^]
        [--peer /work/shared/bench-peer] [--venv /tmp/bench-peer-venv] [--only server|client]
    python perf/perf_bench.py --port 30000 --concurrency 32    # a server already running (e.g. a real SGLang)

With `--port` no simulator is started: both clients load the server on 127.0.0.1:PORT (its tokenizer is
not the word-level one, so bench_serving's retokenized ITL and spectui's token estimate may differ; the
output tok/s, TTFT, TPOT and E2E figures do not depend on it). bench_serving's sglang-oai ITL divides each
chunk's gap by the tokens its text retokenizes into, spectui's by the tokens the server says it carried;
where the text does not round-trip (the real kit's dummy weights: ~1.2x the tokens) the two differ by that
much, by definition: `--peer-backend sglang` (bench_serving on /generate, where its ITL uses the server's
counts too) compares like with like. Besides best-of-N, the paired median ratio over the interleaved runs
is printed: steadier when the machine's load moves between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
PEER_PACKAGES = ["aiohttp", "msgspec", "orjson", "numpy", "requests", "tqdm", "transformers", "tokenizers",
                 "pybase64", "pillow", "psutil"]
# (name, simulator time scale, concurrency)
REGIMES = {"server": ("server-bound", 5.0, 8), "client": ("client-bound", 1000.0, 32)}
FIGURES = (("output tok/s", "output_throughput", "output_tokens_per_s"),
           ("request/s", "request_throughput", "requests_per_s"),
           ("TTFT p50 ms", "median_ttft_ms", ("ttft_ms", "p50")),
           ("TPOT p50 ms", "median_tpot_ms", ("tpot_ms", "p50")),
           ("ITL p50 ms", "median_itl_ms", ("itl_ms", "p50")),
           ("E2E p50 ms", "median_e2e_latency_ms", ("e2e_ms", "p50")),
           ("accept length", "accept_length", "accept_len"))

DRIVER = r"""
import asyncio, json, resource, sys, time
from spectui.load import BenchConfig, load_prompts, run_bench
import spectui
spectui_file = spectui.__file__
url, prompts, n, conc, mt = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ps = load_prompts(prompts)
async def go():
    await run_bench(BenchConfig(url, requests=1, concurrency=1, max_tokens=mt, warmup=0), ps)  # warm-up
    cpu0 = time.process_time()
    res = await run_bench(BenchConfig(url, requests=n, concurrency=conc, max_tokens=mt, warmup=0, ignore_eos=True), ps)
    cpu = time.process_time() - cpu0
    out = res.to_json()
    recs = [r for r in res.records if r.ok and r.spec and r.spec.verify_ct]
    verify = sum(r.spec.verify_ct for r in recs)
    out["accept_len"] = sum(r.output_tokens for r in recs) / verify if verify else None
    out["requests_per_s"] = out.get("requests_per_s") or out["requests"]["ok"] / out["duration_s"]
    out["client_cpu_s"] = cpu
    print(json.dumps(out))
asyncio.run(go())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"simulator exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("simulator did not become healthy")


def peer_venv(venv: Path) -> Path:
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", *PEER_PACKAGES], check=True)
    return py


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_peer(py: Path, peer: Path, port: int, data: Path, tok: Path, n: int, conc: int, mt: int,
             work: Path, backend: str = "sglang-oai") -> dict:
    out = work / f"peer-{time.monotonic_ns()}.jsonl"
    cpu0 = children_cpu()
    subprocess.run([str(py), "-m", "sglang.benchmark.serving", "--backend", backend, "--host", "127.0.0.1",
                    "--port", str(port), "--dataset-name", "custom", "--dataset-path", str(data / "custom.jsonl"),
                    "--num-prompts", str(n), "--sharegpt-output-len", str(mt), "--max-concurrency", str(conc),
                    "--tokenizer", str(tok), "--disable-tqdm", "--warmup-requests", "1", "--output-file", str(out)],
                   cwd=peer / "sgl", env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = json.loads(out.read_text().splitlines()[-1])
    line["client_cpu_s"] = children_cpu() - cpu0  # includes its start-up (tokenizer, imports)
    return line


def run_spectui(pythonpath: Path, port: int, data: Path, n: int, conc: int, mt: int) -> dict:
    res = subprocess.run([sys.executable, "-c", DRIVER + f"\nassert spectui_file.startswith({str(pythonpath)!r})", f"http://127.0.0.1:{port}", str(data / "prompts.jsonl"),
                          str(n), str(conc), str(mt)], env={**os.environ, "PYTHONPATH": str(pythonpath)},
                         cwd=data, check=True, capture_output=True, text=True)  # not cwd: `spectui` on sys.path
    return json.loads(res.stdout.splitlines()[-1])


def pick(d: dict, key: object) -> float | None:
    if isinstance(key, tuple):
        d = d.get(key[0]) or {}
        key = key[1]
    v = d.get(key)  # type: ignore[arg-type]
    return float(v) if isinstance(v, int | float) else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--chars", type=int, default=400, help="prompt length in characters")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", choices=sorted(REGIMES))
    ap.add_argument("--concurrency", type=int, help="override the regime's concurrency")
    ap.add_argument("--old", metavar="REV", help="also run spectui's load generator as of this git revision")
    ap.add_argument("--peer", type=Path, default=Path("/work/shared/bench-peer"))
    ap.add_argument("--venv", type=Path, default=Path("/tmp/bench-peer-venv"))
    ap.add_argument("--port", type=int, help="load this running server instead of starting the simulator")
    ap.add_argument("--tokenizer", type=Path, help="bench_serving's --tokenizer (default: a word-level one, "
                                                   "exact for the simulator; give the real model's folder)")
    ap.add_argument("--peer-backend", choices=("sglang-oai", "sglang"), default="sglang-oai",
                    help="bench_serving's backend: sglang-oai (/v1/completions, as spectui; its ITL retokenizes "
                         "each chunk's text) or sglang (/generate; its ITL splits gaps over the server's token "
                         "counts, spectui's definition)")
    a = ap.parse_args()
    py = peer_venv(a.venv)
    work = Path(tempfile.mkdtemp(prefix="perf-bench-"))
    tok, data = work / "tok", work / "data"
    tok.mkdir()
    data.mkdir()
    subprocess.run([str(py), str(a.peer / "make_tokenizer.py"), str(tok)], check=True, capture_output=True)
    words = tok  # make_prompts draws its words from this vocabulary
    tok = a.tokenizer or tok
    subprocess.run([str(py), str(a.peer / "make_prompts.py"), str(a.requests), str(a.chars), str(words), str(data)],
                   check=True, capture_output=True)
    clients = {"spectui": ROOT}
    if a.old:
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.old, "spectui"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        clients[f"spectui@{a.old}"] = old
    try:
        for key in ["given"] if a.port else [a.only] if a.only else list(REGIMES):
            label, scale, conc = REGIMES.get(key, (f"server on port {a.port}", 0.0, 32))
            conc = a.concurrency or conc
            port = a.port or free_port()
            sim = None if a.port else subprocess.Popen(
                [sys.executable, "-m", "spectui.sim", "--model-path", "m", *SPEC, "--port", str(port),
                 "--sim-time-scale", f"{scale:g}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
            try:
                if sim is not None:
                    wait_health(port, sim)
                best: dict[str, dict] = {}
                runs: dict[str, list[dict]] = {}
                for _ in range(a.repeats):
                    for name in ("bench_serving", *clients):
                        if name == "bench_serving":
                            r = run_peer(py, a.peer, port, data, tok, a.requests, conc, a.max_tokens, work,
                                         a.peer_backend)
                        else:
                            r = run_spectui(clients[name], port, data, a.requests, conc, a.max_tokens)
                        key = "output_throughput" if name == "bench_serving" else "output_tokens_per_s"
                        peer = name == "bench_serving"
                        print(f"  run {name}: {pick(r, key) or 0:.1f} tok/s, TTFT p50 "
                              f"{pick(r, FIGURES[2][1] if peer else FIGURES[2][2]) or 0:.2f} ms, ITL p50 "
                              f"{pick(r, FIGURES[4][1] if peer else FIGURES[4][2]) or 0:.2f} ms, load "
                              f"{os.getloadavg()[0]:.2f}", flush=True)
                        runs.setdefault(name, []).append(r)
                        if name not in best or (pick(r, key) or 0) > (pick(best[name], key) or 0):
                            best[name] = r
            finally:
                if sim is not None:
                    sim.terminate()
                    sim.wait(10)
            report(label, scale, conc, a, best)
            paired(runs, a.peer_backend)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def paired(runs: dict[str, list[dict]], backend: str) -> None:
    """The median over the interleaved pairs (run i of each client) of spectui / bench_serving: steadier than
    best-of-N when the machine's load moves between runs. And how many output tokens bench_serving's
    retokenization counts against the server's own (its per-token ITL divides each chunk's gap by that count)."""
    import statistics

    peer = runs.get("bench_serving") or []
    for name, ours in runs.items():
        if name == "bench_serving":
            continue
        cells = []
        for title, peer_key, our_key in FIGURES[:6]:
            ratios = [v / pv for o, p in zip(ours, peer, strict=False)
                      if (v := pick(o, our_key)) is not None and (pv := pick(p, peer_key))]
            cells.append(f"{title} {statistics.median(ratios):.3f}" if ratios else f"{title} -")
        print(f"paired median {name} / peer over {min(len(ours), len(peer))} pairs: " + ", ".join(cells))
    retok = [(p.get("total_output_tokens_retokenized"), p.get("total_output_tokens")) for p in peer]
    if backend == "sglang-oai" and retok and all(isinstance(r, int) and isinstance(t, int) and t for r, t in retok):
        r, t = retok[-1]
        print(f"bench_serving retokenized the answers into {r} tokens, the server counted {t} ({r / t:.3f}): "
              "its per-token ITL splits each chunk's gap over the retokenized count, spectui's over the server's")


def report(label: str, scale: float, conc: int, a: argparse.Namespace, best: dict[str, dict]) -> None:
    where = f"simulator EAGLE3 time scale {scale:g}" if scale else "the given server"
    print(f"\n== {label}: {where}, concurrency {conc}, {a.requests} requests, "
          f"max_tokens {a.max_tokens}, best of {a.repeats} by output tok/s")
    names = list(best)
    print(f"{'':16s}" + "".join(f"{n:>22s}" for n in names) + "".join(f"{n + ' / peer':>26s}" for n in names[1:]))
    peer = best["bench_serving"]
    for title, peer_key, our_key in FIGURES:
        vals = [pick(best[n], peer_key if n == "bench_serving" else our_key) for n in names]
        pv = vals[0]
        ratios = [("-" if v is None or not pv else f"{v / pv:.3f}") for v in vals[1:]]
        print(f"{title:16s}" + "".join(f"{('-' if v is None else f'{v:.2f}'):>22s}" for v in vals)
              + "".join(f"{r:>26s}" for r in ratios))
    for n in names:
        tokens = pick(best[n], "total_output_tokens" if n == "bench_serving" else "output_tokens") or 1
        cpu = best[n].get("client_cpu_s") or 0.0
        note = " (with its start-up)" if n == "bench_serving" else ""
        print(f"client CPU {n}: {cpu:.2f} s = {1e6 * cpu / tokens:.1f} ms per 1k tokens{note}")
    ours = best[names[1]] if len(names) > 1 else None
    if ours is not None and ours.get("chunk_gap_ms"):
        print(f"spectui chunk gap p50 {ours['chunk_gap_ms'].get('p50')} ms (per chunk), tokens per chunk from "
              f"{ours.get('itl_tokens_source')}")
    _ = peer


if __name__ == "__main__":
    main()
