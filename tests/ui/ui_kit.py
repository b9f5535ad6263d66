"""Helpers for cockpit tests (imported as `from ui_kit import …`; fixtures stay in conftest.py): an app
replaying real corpus logs through the real pipeline, fixed clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session, read_recorded_log, replay_lines

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def corpus_lines(name: str) -> list[str]:
    return read_recorded_log(str(CORPUS / name))


def replay_app(lines: list[str], *, label: str = "replay", launch=None, version=None, chunk: int = 0,
               max_log_lines: int = 50_000, read_only: bool = False, rules=None) -> SpectuiApp:
    session = Session(label=label, log_path="recorded.log", tail_factory=replay_lines(lines, chunk=chunk),
                      replay=True, probe_gpus=False, launch=launch, sglang_version=version,
                      read_only=read_only)
    return SpectuiApp(session, clock=lambda: 1000.0, rules=rules, max_log_lines=max_log_lines)


def sim_lines() -> list[str]:
    """A simulator's log (start-up and serving), its `# ` header lines left out."""
    data = Path(__file__).parent / "data/silent-override-sim.log"
    return [ln for ln in data.read_text().splitlines() if not ln.startswith("# ")]


def streaming(lines: list[str], chunks: int, size: int, every: float):  # type: ignore[no-untyped-def]
    """A tail factory: `chunks` batches of `size` lines (cycling through `lines`), one every `every` seconds,
    numbered from 1; then the server goes quiet and the tail stays open."""
    from spectui.sources.base import ConnState, TailLines, TailState

    async def events(_path: str):  # type: ignore[no-untyped-def]
        yield TailState(ConnState.CONNECTED, "test")
        n = 1
        for _ in range(chunks):
            await asyncio.sleep(every)
            yield TailLines(tuple(lines[(n - 1 + i) % len(lines)] for i in range(size)), n, 0)
            n += size
        await asyncio.sleep(3600)

    return events


async def settle(pilot, app: SpectuiApp) -> None:
    """Wait until the replay has been read and every pending line flushed into the widgets."""
    dash = app.dashboard
    for _ in range(200):
        await pilot.pause()
        if dash.tail_done and dash.finished and not dash._pending and not dash.processing:
            break
        await asyncio.sleep(0.01)
    await pilot.pause()
