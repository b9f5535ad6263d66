"""Benchmark the flag resolver and `spectui flags` against baselines measured in the same run.

Usage: python perf/perf_flags.py
1. resolve() over every recorded launch (tests/data/resolution, 5 x 858) vs argparse alone parsing the
   same argv with the same catalogue parser: the ratio is the cost of the rules on top of argparse.
2. `spectui flags --json -- <seed command>` wall time vs `python3 -c pass` (interpreter start-up).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spectui.core.launch import load_catalogue, resolve  # noqa: E402

DATA = ROOT / "tests" / "data" / "resolution"
VERSIONS = ["0.5.2", "0.5.4.post3", "0.5.6.post2", "0.5.10", "0.5.23"]


def _launches() -> list[tuple[str, list[str]]]:
    out = []
    for v in VERSIONS:
        for line in (DATA / f"sglang-{v}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            out.append((v, ["--model-path", "m", "--device", "cpu", *rec["argv"]]))
    return out


def _time(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    launches = _launches()
    for v in VERSIONS:  # warm the caches (catalogue load, parser build) for both sides
        resolve(["--model-path", "m"], v)

    def argparse_only() -> None:
        for v, argv in launches:
            with contextlib.suppress(Exception):  # argparse errors are part of the work measured
                load_catalogue(v).parse_args(argv)

    def full() -> None:
        for v, argv in launches:
            resolve(argv, v, model_arch="LlamaForCausalLM", device="cpu")

    base, ours = _time(argparse_only), _time(full)
    n = len(launches)
    print(f"resolve: {n} launches in {ours:.3f}s ({ours / n * 1e6:.0f} us each); argparse alone {base:.3f}s; "
          f"ratio {ours / base:.2f}x")

    seed = ("python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
            "--speculative-draft-model-path /d --speculative-eagle-topk 1 --speculative-num-draft-tokens 16 "
            "--speculative-num-steps 1")
    py = _time(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat=5)
    cli = _time(lambda: subprocess.run([sys.executable, "-m", "spectui", "flags", "--json", "--", seed],
                                       check=True, capture_output=True, cwd=ROOT), repeat=5)
    print(f"spectui flags: {cli:.3f}s wall; python3 -c pass {py:.3f}s; ratio {cli / py:.1f}x")


if __name__ == "__main__":
    main()
