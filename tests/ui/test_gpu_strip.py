"""GPU strip: shown from a real `nvidia-smi` process on the host's PATH, hidden when there is none."""

from __future__ import annotations

import asyncio
import os
import stat

from spectui.sources.local import LocalHost
from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session, replay_lines
from spectui.ui.widgets.gpu_strip import GpuStrip

# What `nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits`
# prints on a two-GPU box (second GPU unreadable: nvidia-smi prints [N/A]).
NVIDIA_SMI_OUTPUT = "0, 87, 71234, 81559\n1, [N/A], 1024, 81559\n"


def app_with_path(path_dir: str) -> SpectuiApp:
    session = Session(label="local", log_path="x.log", host=LocalHost(), tail_factory=replay_lines([]),
                      replay=True, probe_gpus=True)
    return SpectuiApp(session, rules=[])


async def test_strip_shows_gpus_from_nvidia_smi(tmp_path, monkeypatch) -> None:
    exe = tmp_path / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nprintf '{NVIDIA_SMI_OUTPUT.replace(chr(10), chr(92) + 'n')}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    app = app_with_path(str(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        strip = app.dashboard.query_one(GpuStrip)
        for _ in range(100):
            if strip.gpus:
                break
            await asyncio.sleep(0.05)
        await pilot.pause()
        assert [(g.index, g.util) for g in strip.gpus] == [(0, 87.0), (1, None)]
        assert strip.has_class("-visible") and strip.display
        text = strip.render().plain
        assert "0:87% 70/80G" in text and "1:?" in text


async def test_strip_hidden_without_nvidia_smi(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no nvidia-smi
    app = app_with_path(str(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):  # the probe gives up by itself when nvidia-smi is missing
            if app.dashboard.gpu_note:
                break
            await asyncio.sleep(0.05)
        assert app.dashboard.gpu_note.startswith("no GPU strip: nvidia-smi exited 127")
        await pilot.pause()
        strip = app.dashboard.query_one(GpuStrip)
        assert not strip.gpus and not strip.has_class("-visible")
