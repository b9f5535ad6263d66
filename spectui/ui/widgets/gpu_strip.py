"""GPU strip: per-GPU utilisation and memory from nvidia-smi (shown only when the host has nvidia-smi)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.ui.model import GpuInfo

NVIDIA_SMI_ARGV = (
    "nvidia-smi",
    "--query-gpu=index,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
)


def parse_nvidia_smi(stdout: str) -> tuple[GpuInfo, ...]:
    """Rows of `NVIDIA_SMI_ARGV` output; fields nvidia-smi could not read ("[N/A]") become None."""

    def num(text: str) -> float | None:
        try:
            return float(text.strip())
        except ValueError:
            return None

    gpus = []
    for line in stdout.splitlines():
        parts = line.split(",")
        if len(parts) < 4 or num(parts[0]) is None:
            continue
        gpus.append(GpuInfo(int(num(parts[0]) or 0), num(parts[1]), num(parts[2]), num(parts[3])))
    return tuple(gpus)


class GpuStrip(Widget):
    DEFAULT_CSS = """
    GpuStrip { height: 1; }
    """

    gpus: reactive[tuple[GpuInfo, ...]] = reactive((), layout=False)

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        t.append(" GPU ", "bold reverse")
        for g in self.gpus:
            t.append(f" {g.index}:", "bold")
            util = "?" if g.util is None else f"{g.util:.0f}%"
            t.append(util, "green" if (g.util or 0) >= 50 else "yellow")
            if g.mem_used_mib is not None and g.mem_total_mib:
                t.append(f" {g.mem_used_mib / 1024:.0f}/{g.mem_total_mib / 1024:.0f}G", "dim")
        return t

    def set_gpus(self, gpus: Sequence[GpuInfo]) -> None:
        self.gpus = tuple(gpus)
