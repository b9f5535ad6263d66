"""Benchmark `spectui check` against `grep -c 'Decode batch'` on a generated ~1 GB SGLang-format log.

Usage: python perf/perf_check.py [--size-mb 1024] [--keep] [--runs 3] [--tree DIR]
Writes perf/out/big.log (gitignored), runs both on the same file in the same run (file in page cache
for both: grep runs first once to warm it), and prints both times, the ratio and spectui's peak RSS;
for context also check in one process (SPECTUI_CHECK_PARALLEL=0) and its start-up time alone. The
machine's load average is printed before and after (the machine may be shared). `--tree DIR` also
times another copy of spectui (DIR holds its spectui/ package, e.g. the code before a change) in the
same interleaved runs, so before/after ratios come from one run on one load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"

STARTUP = """\
Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1
[2026-11-30 10:00:00] server_args=ServerArgs(model_path='/models/target', tokenizer_path='/models/target', port=30000, tp_size=2, dp_size=2, speculative_algorithm='EAGLE3', speculative_draft_model_path='/models/draft', speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, max_running_requests=48)
[2026-11-30 10:00:05 DP0 TP0] Init torch distributed begin.
[2026-11-30 10:00:06 DP0 TP0] Load weight begin. avail mem=78.50 GB
[2026-11-30 10:00:30 DP0 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.10 GB, mem usage=16.40 GB.
[2026-11-30 10:00:31 DP0 TP0] Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=61.00 GB, mem usage=1.10 GB.
[2026-11-30 10:00:32 DP0 TP0] KV Cache is allocated. #tokens: 400000, K size: 20.00 GB, V size: 20.00 GB
[2026-11-30 10:00:32 DP0 TP0] Memory pool end. avail mem=20.00 GB
[2026-11-30 10:00:33 DP0 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=19.50 GB
[2026-11-30 10:00:50 DP0 TP0] Capture cuda graph end. Time elapsed: 17.00 s. mem usage=1.20 GB. avail mem=18.30 GB.
[2026-11-30 10:00:51 DP0 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=131072, available_gpu_mem=18.30 GB
[2026-11-30 10:00:52] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-11-30 10:00:55] The server is fired up and ready to roll!
"""

TAIL = """\
[2026-11-30 23:59:59 DP1 TP2] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2534, in run_scheduler_process
    scheduler.event_loop_overlap()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
[2026-11-30 23:59:59] Received sigquit from a child process. It usually means the child failed.
"""


def _block(rng: random.Random, lines: int) -> str:
    out: list[str] = []
    for i in range(lines):
        hh, mm, ss = 10 + (i // 3600) % 12, (i // 60) % 60, i % 60
        ts = f"2026-11-30 {hh:02d}:{mm:02d}:{ss:02d}"
        r = rng.random()
        if r < 0.80:
            dp = i % 2
            acc = 1.5 + rng.random()
            out.append(
                f"[{ts} DP{dp} TP{dp * 2}] Decode batch, #running-req: {rng.randint(1, 48)}, "
                f"#token: {rng.randint(1000, 90000)}, token usage: {rng.random():.2f}, accept len: {acc:.2f}, "
                f"accept rate: {acc / 4:.2f}, cuda graph: True, gen throughput (token/s): {rng.uniform(50, 400):.2f}, "
                f"#queue-req: {rng.randint(0, 5)}, "
            )
        elif r < 0.90:
            out.append(
                f"[{ts} DP{i % 2} TP{(i % 2) * 2}] Prefill batch, #new-seq: 1, #new-token: {rng.randint(10, 900)}, "
                f"#cached-token: {rng.randint(0, 500)}, token usage: {rng.random():.2f}, #running-req: "
                f"{rng.randint(0, 48)}, #queue-req: 0, "
            )
        elif r < 0.99999:
            out.append(f'[{ts}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
        else:  # rare lines (about one per 2 MB) that must go through the line-by-line parser
            out.append(f"[{ts} DP0 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
                       "#new_token_ratio: 0.4000 -> 0.6000")
    return "\n".join(out) + "\n"


def generate(path: Path, size_mb: int) -> None:
    rng = random.Random(7)
    blocks = [_block(rng, 20000).encode() for _ in range(4)]
    target = size_mb * 1024 * 1024
    with open(path, "wb") as f:
        f.write(STARTUP.encode())
        written = 0
        i = 0
        while written < target:
            f.write(blocks[i % len(blocks)])
            written += len(blocks[i % len(blocks)])
            i += 1
        f.write(TAIL.encode())


CPU: dict[str, float] = {}  # CPU seconds (user + sys, the process and its children) of the last timed() run


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if out.returncode not in (0, 1):
        sys.exit(f"{argv[0]} failed ({out.returncode}): {out.stderr.strip()}")
    return elapsed, out.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--keep", action="store_true", help="keep perf/out/big.log afterwards")
    ap.add_argument("--runs", type=int, default=3, help="best of N runs of each (default 3)")
    ap.add_argument("--tree", metavar="DIR", help="also time the spectui package in DIR (PYTHONPATH=DIR)")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    path = OUT / "big.log"
    if not path.exists() or abs(path.stat().st_size - args.size_mb * 1024 * 1024) > 8 * 1024 * 1024:
        print(f"generating {path} ({args.size_mb} MB) ...", flush=True)
        generate(path, args.size_mb)
    grep = shutil.which("grep") or "grep"
    timed([grep, "-c", "Decode batch", str(path)])  # warm the page cache
    spectui = [sys.executable, "-m", "spectui", "check", "--json", str(path)]
    # Alternate the two and keep each one's best of --runs: the machine may be shared.
    # Context, not the target: the cheapest Python pass there is (read 8 MB chunks, count newlines).
    floor = [sys.executable, "-c", "import sys\nf = open(sys.argv[1], 'rb')\nn = 0\nwhile c := f.read(8 << 20):\n"
             "    n += c.count(b'\\n')\nprint(n)", str(path)]
    # Also one process only (no counting worker, SPECTUI_CHECK_PARALLEL=0) and the start-up alone (an
    # empty log, rules from the cache as in every run after the first).
    empty = OUT / "empty.log"
    empty.write_bytes(b"")
    one_env = dict(os.environ, SPECTUI_CHECK_PARALLEL="0")
    tree_env = dict(os.environ, PYTHONPATH=os.path.abspath(args.tree)) if args.tree else None
    t_grep = t_check = t_floor = t_one = t_start = t_tree = float("inf")
    # CPU seconds too (best of the runs): on a loaded machine wall time is mostly waiting for a core, and the
    # CPU ratio is what the code costs (it still counts both of check's processes, on one core or two).
    c_grep = c_check = c_tree = c_one = float("inf")
    grep_out = check_out = tree_out = ""
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    for i in range(args.runs):
        t_g, grep_out = timed([grep, "-c", "Decode batch", str(path)])
        t_grep, c_grep = min(t_grep, t_g), min(c_grep, CPU["last"])
        t, check_out = timed(spectui)
        t_check, c_check = min(t_check, t), min(c_check, CPU["last"])
        line = f"run {i + 1}: grep {t_g:.2f} s, check {t:.2f} s"
        if tree_env is not None:
            t, tree_out = timed(spectui, env=tree_env)
            t_tree, c_tree = min(t_tree, t), min(c_tree, CPU["last"])
            line += f", --tree check {t:.2f} s"
        t_one = min(t_one, timed(spectui, env=one_env)[0])
        c_one = min(c_one, CPU["last"])
        t_floor = min(t_floor, timed(floor)[0])
        t_start = min(t_start, timed([*spectui[:-1], str(empty)])[0])
        print(f"{line}  (load {os.getloadavg()[0]:.2f})", flush=True)
    load_after = os.getloadavg()
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = json.loads(check_out)
    size = path.stat().st_size / 1024 / 1024
    print(f"file: {size:.0f} MB, {result['lines']} lines")
    print(f"grep -c 'Decode batch': {t_grep:.2f} s -> {grep_out.strip()}   (best of {args.runs})")
    print(f"spectui check --json:   {t_check:.2f} s -> decode {result['records']['decode']}, "
          f"warning {result['records']['warning']}, error {result['records']['error']}   (best of {args.runs})")
    print(f"ratio: {t_check / t_grep:.2f}x   (target <= 2x; with a counting worker process on files >= 64 MB)")
    print(f"CPU seconds (best of {args.runs}): grep {c_grep:.2f}, check {c_check:.2f} ({c_check / c_grep:.2f}x), "
          f"one process {c_one:.2f} ({c_one / c_grep:.2f}x)")
    if tree_env is not None:
        same = "same JSON" if tree_out == check_out else "JSON DIFFERS"
        print(f"--tree {args.tree}: {t_tree:.2f} s ({t_tree / t_grep:.2f}x grep; CPU {c_tree:.2f} s, "
              f"{c_tree / c_grep:.2f}x; {same})")
    print(f"one process (SPECTUI_CHECK_PARALLEL=0): {t_one:.2f} s ({t_one / t_grep:.1f}x grep)")
    print(f"start-up alone (check --json on an empty log): {t_start:.2f} s")
    print(f"for context: python read + count newlines only: {t_floor:.2f} s ({t_floor / t_grep:.1f}x grep)")
    print(f"peak RSS of the children (max of grep, spectui): {rss_mb:.0f} MB")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} "
          f"({os.cpu_count()} cores)")
    if int(grep_out.strip()) != result["records"]["decode"]:
        print("MISMATCH: decode counts differ")
        return 1
    if not args.keep:
        path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
