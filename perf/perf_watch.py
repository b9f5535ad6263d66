"""Bench `spectui watch` over loopback SSH: append->event latency vs plain `ssh host tail -F`; a burst.

    python3 perf/perf_watch.py                      # latency (300 lines) + 20k lines/s for 60 s
    python3 perf/perf_watch.py --burst-seconds 10   # shorter burst

Starts a throwaway OpenSSH sshd on 127.0.0.1 (tests/sshd_harness.py). Latency: a real-format
`Decode batch` line is appended every 20 ms; for spectui the clock stops when its `decode` event for that
line number is printed, for the baseline when `ssh host tail -F` prints the line. Burst: lines (1 in 10
a decode line) are appended at the given rate; `spectui watch --raw --jsonl` must print every line exactly
once, in order; its RSS is sampled every second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from sshd_harness import Sshd, start_sshd  # noqa: E402

DECODE = ("[2025-12-03 10:00:05 TP0] Decode batch, #running-req: 8, #token: 37565, token usage: 0.13, "
          "accept len: 2.94, accept rate: 0.65, cuda graph: True, gen throughput (token/s): 173.06, #queue-req: 0")
OTHER = '[2025-12-03 10:00:05] INFO:     127.0.0.1:50472 - "POST /generate HTTP/1.1" 200 OK'


SETTLE_S = 2.0  # after the first output, before the first measured append


def watch_argv(sshd: Sshd, log: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spectui", "watch", f"{sshd.target}:{log}", "--jsonl", *extra,
            "--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(argv: list[str], log: Path, n_lines: int, is_hit) -> tuple[list[float], float]:  # type: ignore[no-untyped-def]
    """Append n_lines decode lines 20 ms apart; latency until `is_hit(output_line) -> line number` fires.
    Appending starts SETTLE_S after the first output (both print something once they follow the file), so
    the start-up — returned apart, in ms — is not counted as the latency of the first lines."""
    log.write_text("".join(f"{OTHER}\n" for _ in range(10)))
    base = 10
    t_start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdout is not None
    sent: dict[int, float] = {}
    got: dict[int, float] = {}
    done, ready = threading.Event(), threading.Event()
    first: list[float] = []

    def reader() -> None:
        for out in proc.stdout:  # type: ignore[union-attr]
            if not ready.is_set():
                first.append(time.perf_counter())
                ready.set()
            n = is_hit(out)
            if n is not None and n not in got:
                got[n] = time.perf_counter()
                if len(got) >= n_lines:
                    done.set()
                    return

    threading.Thread(target=reader, daemon=True).start()
    ready.wait(60)  # its first output: following (what it prints then is not counted)
    time.sleep(SETTLE_S)  # and its wake-up channel (spectui's `tail -c1 -F`) has started
    with open(log, "a") as f:
        for i in range(n_lines):
            n = base + i + 1
            sent[n] = time.perf_counter()
            f.write(DECODE + "\n")
            f.flush()
            time.sleep(0.02)
    done.wait(30)
    proc.terminate()
    proc.wait(10)
    startup = (first[0] - t_start) * 1000 if first else float("nan")
    return [(got[n] - sent[n]) * 1000 for n in sent if n in got], startup


def latency(sshd: Sshd, tmp: Path, n_lines: int) -> None:
    log = tmp / "lat.log"

    def spectui_hit(out: str) -> int | None:
        ev = json.loads(out)
        return ev["n"] if ev.get("type") == "decode" else None

    counter = {"n": 10}

    def tail_hit(out: str) -> int | None:
        if "Decode batch" in out:
            counter["n"] += 1
            return counter["n"]
        return None

    rows = []
    for name, argv, hit in (
        ("ssh host tail -F", sshd.ssh_argv("tail", "-n", "1", "-F", str(log)), tail_hit),  # prints one line at start
        ("spectui watch --jsonl", watch_argv(sshd, log, "--duration", "600"), spectui_hit),
    ):
        counter["n"] = 10
        lat, startup = measure(argv, log, n_lines, hit)
        rows.append((name, len(lat), statistics.median(lat), pct(lat, 0.99), startup))
    print(f"\nlatency, line appended -> printed ({n_lines} decode lines, 20 ms apart, loopback sshd;"
          f" appending starts {SETTLE_S:g} s after the first output)")
    print(f"{'':24} {'seen':>6} {'p50 ms':>8} {'p99 ms':>8} {'start-up ms':>12}")
    for name, seen, p50, p99, startup in rows:
        print(f"{name:24} {seen:>6} {p50:>8.1f} {p99:>8.1f} {startup:>12.0f}")
    print(f"ratio spectui/tail: p50 {rows[1][2] / rows[0][2]:.1f}x  p99 {rows[1][3] / rows[0][3]:.1f}x"
          f"  start-up {rows[1][4] / rows[0][4]:.1f}x")


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def burst(sshd: Sshd, tmp: Path, rate: int, seconds: float) -> None:
    log = tmp / "burst.log"
    log.write_text("")
    total = int(rate * seconds)
    proc = subprocess.Popen(watch_argv(sshd, log, "--raw", "--from-start", "--duration", str(seconds * 20 + 60)),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=1 << 20)
    assert proc.stdout is not None
    state = {"lines": 0, "bad": 0, "last_at": 0.0}
    done = threading.Event()

    def reader() -> None:
        expect = 1
        for raw in proc.stdout:  # type: ignore[union-attr]
            ev = json.loads(raw)
            if ev.get("type") != "line":
                continue
            if ev["n"] != expect or not ev["text"].endswith(f" seq={expect}"):
                state["bad"] += 1
            expect += 1
            state["lines"] += 1
            if state["lines"] == total:
                state["last_at"] = time.perf_counter()
                done.set()
                return

    threading.Thread(target=reader, daemon=True).start()
    time.sleep(3.0)
    rss: list[float] = []
    t0 = time.perf_counter()
    written = 0
    batch = max(1, rate // 100)  # every 10 ms
    next_rss = t0
    with open(log, "a") as f:
        while written < total:
            target_t = t0 + written / rate
            now = time.perf_counter()
            if now < target_t:
                time.sleep(target_t - now)
            k = min(batch, total - written)
            f.write("".join(f"{DECODE if (written + i) % 10 == 0 else OTHER} seq={written + i + 1}\n"
                            for i in range(k)))
            f.flush()
            written += k
            if now >= next_rss:
                rss.append(rss_mb(proc.pid))
                next_rss += 1.0
    t_written = time.perf_counter()
    while not done.wait(1.0):
        rss.append(rss_mb(proc.pid))
        if time.perf_counter() - t_written > seconds * 20 + 30 or proc.poll() is not None:
            break
    proc.terminate()
    proc.wait(10)
    wrote_for = t_written - t0
    lag = state["last_at"] - t_written if state["last_at"] else float("nan")
    print(f"\nburst: {total} lines written in {wrote_for:.1f} s ({total / wrote_for:,.0f} lines/s)")
    print(f"spectui watch --raw --jsonl printed {state['lines']} lines, {state['bad']} out of order or wrong; "
          f"caught up {lag:.1f} s after the writer stopped "
          f"(reads {state['lines'] / (wrote_for + lag):,.0f} lines/s end to end)")
    if rss:
        print(f"RSS of spectui watch: start {rss[0]:.0f} MB, max {max(rss):.0f} MB, end {rss[-1]:.0f} MB")
    print("nothing lost" if state["lines"] == total and state["bad"] == 0 else "LINES LOST OR REPEATED")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-lines", type=int, default=300)
    ap.add_argument("--rate", type=int, default=20000, help="burst lines per second")
    ap.add_argument("--burst-seconds", type=float, default=60.0)
    ap.add_argument("--skip-burst", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="spectui-bench-watch-") as d:
        tmp = Path(d)
        sshd = start_sshd(tmp / "sshd")
        try:
            print(f"loopback sshd on port {sshd.port}; load average {os.getloadavg()[0]:.1f}")
            latency(sshd, tmp, args.latency_lines)
            if not args.skip_burst:
                burst(sshd, tmp, args.rate, args.burst_seconds)
        finally:
            sshd.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
