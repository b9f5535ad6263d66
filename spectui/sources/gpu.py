"""GPU poller: `nvidia-smi --query-gpu=... --format=csv` over the host's connection.

No nvidia-smi on the host is not an error: `query_gpus` returns (None, message) and callers go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from spectui.errors import HostError
from spectui.sources.base import Host

FIELDS = "index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"


@dataclass(frozen=True, slots=True)
class GpuStat:
    index: int
    name: str
    util_pct: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    temp_c: float | None
    power_w: float | None


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


def parse_csv(text: str) -> list[GpuStat]:
    """nvidia-smi `--format=csv,noheader,nounits` rows -> GpuStat (rows that do not parse are skipped)."""
    out = []
    for row in text.splitlines():
        parts = [p.strip() for p in row.split(",")]
        if len(parts) != 7 or not parts[0].isdigit():
            continue
        out.append(GpuStat(int(parts[0]), parts[1], *(_num(p) for p in parts[2:])))  # type: ignore[arg-type]
    return out


async def query_gpus(host: Host) -> tuple[list[GpuStat] | None, str]:
    """(GPUs, "") or (None, one-line reason)."""
    try:
        res = await host.run(["nvidia-smi", f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits"],
                             timeout=15)
    except HostError as exc:
        return None, str(exc)
    if res.exit_status == 127 or "not found" in res.stderr:
        return None, f"nvidia-smi not found on {host.name}: no GPU stats (everything else works)"
    if res.exit_status != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()[:1] or [f"exit status {res.exit_status}"]
        return None, f"nvidia-smi failed on {host.name}: {msg[0][:160]}"
    return parse_csv(res.stdout), ""


async def poll_gpus(host: Host, interval: float = 2.0) -> AsyncIterator[tuple[list[GpuStat] | None, str]]:
    """Query every `interval` seconds; after nvidia-smi is found missing, say so once and stop."""
    while True:
        gpus, msg = await query_gpus(host)
        yield gpus, msg
        if gpus is None and "not found" in msg:
            return
        await asyncio.sleep(interval)
