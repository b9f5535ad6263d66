"""`spectui connect FILE` on a bundle: replayed read-only in the cockpit at --speed 50, with the panels as
they were — the same diagnoses as `spectui check` on the same log with the same launch, the config's
override, the plots — and no host behind it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.bundle import BundleParts, read_bundle, write_bundle
from spectui.ui.app import SpectuiApp
from spectui.ui.bundle_replay import replay_session, timed_tail
from spectui.ui.session import read_recorded_log
from spectui.ui.widgets.config_panel import ConfigPanel
from spectui.ui.widgets.diagnoses import DiagnosesPanel

DATA = Path(__file__).parent / "data" / "silent-override-sim.log"


def _launch() -> str:
    head = DATA.read_text().splitlines()[:3]
    return next(line for line in head if line.startswith("# launch: ")).removeprefix("# launch: ")


@pytest.fixture
def bundle_file(tmp_path) -> Path:
    lines = read_recorded_log(str(DATA))
    path = tmp_path / "seed.spectui.tar.gz"
    write_bundle(path, BundleParts(target="gpu-box", sglang_version="0.5.23", log="\n".join(lines) + "\n",
                                   launch={"command": _launch(), "env": {"HF_TOKEN": "hf_abcdefgh"}},
                                   window=(1000.0, 1060.0)))
    return path


async def test_replay_at_speed_50_shows_what_check_says(bundle_file, tmp_path) -> None:
    bundle = read_bundle(bundle_file)
    session = replay_session(bundle, speed=50)
    assert session.read_only and session.host is None and session.replay
    app = SpectuiApp(session)
    loop = asyncio.get_running_loop()
    async with app.run_test(size=(160, 48)) as pilot:
        dash = app.dashboard
        start = loop.time()
        while not (dash.tail_done and dash.finished and not dash.processing):
            assert loop.time() - start < 60, "the replay never ended"
            await pilot.pause(0.05)
        await dash.wait_processed()
        shown = [d.rule for d in dash.query_one(DiagnosesPanel).diagnoses]
        rows = {r.key: r for r in dash.query_one(ConfigPanel).view.rows}
        assert rows["speculative_num_draft_tokens"].differs
        assert dash.query_one("LogView").last_line_no == len(bundle.log_lines())
        assert dash.last_update.snapshot.samples > 0  # the plots have their points
        await pilot.press("r")  # read-only: relaunch disabled
        assert app.screen.query_one("#go").disabled
    log = tmp_path / "same.log"
    log.write_bytes(bundle.log_bytes)
    out = subprocess.run([sys.executable, "-m", "spectui", "check", str(log), "--json", "--launch",
                          bundle.launch_command, "--sglang-version", "0.5.23"], capture_output=True, text=True,
                         timeout=60)
    expected = [d["rule"] for d in json.loads(out.stdout)["diagnoses"]]
    assert "SPEC003" in expected
    assert sorted(shown) == sorted(expected)


async def test_timed_tail_waits_for_each_line_and_batches_what_is_due() -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(round(s, 3))
        now[0] += s

    events = [(0.0, "a"), (0.0, "b"), (1.0, "c"), (1.5, "d"), (1.5, "e")]
    got = [ev async for ev in timed_tail(events, clock=lambda: now[0], sleep=sleep)("x")]
    batches = [(e.first_line, e.lines) for e in got[1:]]
    assert batches == [(1, ("a", "b")), (3, ("c",)), (4, ("d", "e"))]
    assert slept == [1.0, 0.5]  # each gap is above MIN_GAP
