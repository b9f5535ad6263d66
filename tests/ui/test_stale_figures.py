"""Stale is visible (#24), through Textual's pilot on the real simulator followed like `spectui connect local`:
a server that served a few requests and went quiet shows its idle load from /metrics (running 0, gen tok/s
0.0 from the generation-token counter) and the log's last figures "as of HH:MM:SS"; after kill -9 the
figures say "server gone", the header's phase is history ("was SERVING") and the phase line stops counting
("gone"). The timeline keeps counting a quiet server's serving time."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys

import httpx
from test_relaunch_sim import wait_for

from spectui.commands.connect import build_session
from spectui.commands.demo.simrun import free_port
from spectui.sources.liveness import LivenessConfig
from spectui.ui.app import SpectuiApp
from spectui.ui.mixins import stalewatch
from spectui.ui.phases import PhaseTimeline
from spectui.ui.widgets.diagnoses import DiagnosesPanel
from spectui.ui.widgets.header import HeaderBar
from spectui.ui.widgets.spec_panel import SpecPanel
from spectui.ui.widgets.timeline import PhaseTimelineBar, timeline_text

FLAGS = ["--model-path", "/m/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/m/d",
         "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
         "--enable-metrics", "--decode-log-interval", "4"]


def _start(tmp_path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    env["SPECTUI_SIM_TIME_SCALE"] = "40"  # no built-in traffic: only the requests this test sends
    with open(tmp_path / "server.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "spectui.sim", *FLAGS, "--port", str(port)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)


async def _requests(port: int, n: int) -> None:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        for _ in range(200):
            try:
                if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
        body = {"model": "/m/llama", "prompt": "hello", "max_tokens": 64}
        await asyncio.gather(*(client.post(f"http://127.0.0.1:{port}/v1/completions", json=body) for _ in range(n)))


async def test_a_quiet_then_killed_server_says_its_figures_are_old(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(stalewatch, "QUIET_AFTER_S", 2.0)
    monkeypatch.setattr(stalewatch, "METRICS_EVERY_S", 0.5)
    port = free_port()
    proc = _start(tmp_path, port)
    try:
        await _requests(port, 4)
        args = argparse.Namespace(target="local", log=None, pid=proc.pid, server_port=None, read_only=True)
        session = await build_session(args)
        session.probe_gpus, session.liveness, session.from_start = False, LivenessConfig(interval=0.3), True
        app = SpectuiApp(session)
        async with app.run_test(size=(170, 48)) as pilot:
            dash = app.dashboard
            panel, header = dash.query_one(SpecPanel), dash.query_one(HeaderBar)
            await wait_for(lambda: dash.last_update is not None and dash.last_update.snapshot.samples > 0, pilot)
            await wait_for(lambda: panel.data.idle is not None and panel.data.idle.gen_tps is not None, pilot, 30)
            text = panel.render().plain
            assert re.search(r"\(as of \d\d:\d\d:\d\d · no decode line since\)", text), text
            assert "gen tok/s 0.0  now, from /metrics" in text and "running 0  queued 0  (/metrics)" in text, text
            os.killpg(proc.pid, signal.SIGKILL)  # no shutdown line, no traceback
            proc.wait()
            await wait_for(lambda: header.info.health == "gone", pilot, 30)
            await wait_for(lambda: "server gone" in (panel.data.stale or ""), pilot, 10)
            text = panel.render().plain
            assert re.search(r"\(as of \d\d:\d\d:\d\d · server gone\)", text) and "/metrics" not in text, text
            assert "was SERVING" in header.render().plain
            diags = dash.query_one(DiagnosesPanel)
            await wait_for(lambda: "CRASH008" in [d.rule for d in diags.diagnoses], pilot, 10)
            crash = next(d for d in diags.diagnoses if d.rule == "CRASH008")
            assert "dmesg -T | grep -i -E 'killed process|out of memory'" in crash.message
            await wait_for(lambda: "gone (no shutdown line)" in dash.query_one(PhaseTimelineBar).plain, pilot, 10)
            shown = dash.query_one(PhaseTimelineBar).plain
            await pilot.pause(1.2)
            assert dash.query_one(PhaseTimelineBar).plain == shown  # stopped counting
            await pilot.press("q")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_phase_line_counts_a_quiet_server_and_stops_at_its_death() -> None:
    tl = PhaseTimeline()
    tl.advance("serving", 0.0, None)
    assert "serving 35s" in timeline_text(tl.steps, 35.0, tl.last, 200).plain
    assert "serving 2m" in timeline_text(tl.steps, 150.0, tl.last, 200).plain  # no line since: still counts
    tl.gone(160.0)
    line = timeline_text(tl.steps, 900.0, tl.last, 200).plain
    assert "serving 2m40s › gone (no shutdown line)" in line
    assert timeline_text(tl.steps, 5000.0, tl.last, 200).plain == line
    tl.observe([], "serving", 5001.0)  # the old log's last phase after the death: no new launch
    assert timeline_text(tl.steps, 5002.0, tl.last, 200).plain == line
