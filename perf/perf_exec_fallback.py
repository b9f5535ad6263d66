"""Bench the exec fallback (a server without SFTP) against SFTP, in the same run: append -> seen latency
of a followed log, and catch-up throughput (reading a big log from its start).

    python3 perf/perf_exec_fallback.py                 # 3 rounds x 100 lines per transport, 32 MB catch-up
    python3 perf/perf_exec_fallback.py --lines 50 --rounds 2 --catchup-mb 8

Starts two throwaway OpenSSH sshds on 127.0.0.1 (tests/sshd_harness.py): one with `Subsystem sftp`, one
without. Each transport follows its own file with spectui's LogTail over SSHHost; a line is appended every
20 ms and the clock stops when the tail hands it out. Rounds alternate (sftp, exec, sftp, exec ...) so
load on the machine falls on both alike. Prints medians / p90 and the exec/sftp ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from sshd_harness import Sshd, start_sshd  # noqa: E402

from spectui.sources.base import TailLines  # noqa: E402
from spectui.sources.ssh import SSHHost, SSHOptions  # noqa: E402
from spectui.sources.tail import LogTail  # noqa: E402


def host_for(sshd: Sshd) -> SSHHost:
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def latency(host: SSHHost, log: Path, n: int, gap: float) -> list[float]:
    """Append n lines `gap` s apart; seconds from each append until the tail hands the line out."""
    log.write_text("")
    sent: dict[str, float] = {}
    lat: list[float] = []
    done = asyncio.Event()
    ready = asyncio.Event()

    async def consume() -> None:
        async for ev in LogTail(host, str(log), from_start=True):
            if not isinstance(ev, TailLines):
                ready.set()
                continue
            now = time.perf_counter()
            for line in ev.lines:
                if line in sent:
                    lat.append(now - sent[line])
            if len(lat) >= n:
                done.set()

    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(ready.wait(), 30)
        await asyncio.sleep(1.5)  # past the tail's first identity check
        with open(log, "a") as f:
            for i in range(n):
                await asyncio.sleep(gap)
                text = f"line {i} {'x' * 100}"
                sent[text] = time.perf_counter()
                f.write(text + "\n")
                f.flush()
        await asyncio.wait_for(done.wait(), 60)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return lat


async def catchup(host: SSHHost, log: Path, mb: int) -> float:
    """MB/s of reading a `mb` MB log from its start to its end through the tail."""
    line = b"y" * 99 + b"\n"
    log.write_bytes(line * (mb * 1024 * 1024 // len(line)))
    total = log.stat().st_size
    t0 = time.perf_counter()
    async for ev in LogTail(host, str(log), from_start=True):
        if isinstance(ev, TailLines) and ev.end_offset >= total:
            break
    return mb / (time.perf_counter() - t0)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100, help="lines per round (default 100)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per transport (default 3)")
    ap.add_argument("--gap", type=float, default=0.02, help="seconds between appends (default 0.02)")
    ap.add_argument("--catchup-mb", type=int, default=32, help="catch-up file size in MB (default 32)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        servers = {"sftp": start_sshd(root / "sftp"), "exec": start_sshd(root / "exec", sftp=False)}
        hosts = {k: host_for(s) for k, s in servers.items()}
        lat: dict[str, list[float]] = {k: [] for k in servers}
        rate: dict[str, list[float]] = {k: [] for k in servers}
        try:
            for h in hosts.values():
                await h.connect()
            for r in range(args.rounds):
                for k, h in hosts.items():
                    lat[k] += await latency(h, root / f"{k}.log", args.lines, args.gap)
                    rate[k].append(await catchup(h, root / f"{k}-big.log", args.catchup_mb))
                    assert h.transport == k, (k, h.transport)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for h in hosts.values():
                await h.close()
            for s in servers.values():
                s.stop()
    print(f"append -> seen latency, {args.rounds} x {args.lines} lines per transport, {args.gap * 1000:g} ms apart")
    for k in lat:
        v = [x * 1000 for x in lat[k]]
        print(f"  {k:5s} n={len(v):4d}  median {statistics.median(v):6.2f} ms  p90 {pct(v, 0.9):6.2f} ms  "
              f"max {max(v):6.2f} ms")
    med = {k: statistics.median(v) for k, v in lat.items()}
    p90 = {k: pct(v, 0.9) for k, v in lat.items()}
    print(f"  ratio exec/sftp: median {med['exec'] / med['sftp']:.2f}x  p90 {p90['exec'] / p90['sftp']:.2f}x")
    print(f"catch-up from the start of a {args.catchup_mb} MB log")
    for k in rate:
        print(f"  {k:5s} median {statistics.median(rate[k]):7.1f} MB/s")
    print(f"  ratio exec/sftp: {statistics.median(rate['exec']) / statistics.median(rate['sftp']):.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
