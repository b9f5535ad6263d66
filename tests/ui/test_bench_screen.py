"""The cockpit with a baseline and `b` against the real simulator: the speculative panel shows ×N vs no
speculation (red below 1) and the slower-than-baseline diagnosis fires there; `b` benches the server in a
worker while the log keeps flowing, the result in place; a bench of a server without speculation becomes the
cockpit's baseline; a baseline recorded in bench history for this host+model is picked up at start."""

from __future__ import annotations

import asyncio
import json

import pytest

from spectui.core.rules import BaselineTps
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.bench import BenchScreen, cockpit_baseline
from spectui.ui.widgets.spec_panel import SpecPanel

pytestmark = pytest.mark.timeout(180)


async def wait_for(predicate, pilot, timeout: float = 90.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out waiting for the cockpit"
        await pilot.pause(0.1)


def demo_session(tmp_path):
    from test_relaunch_sim import start_demo_session

    demo, path, session = start_demo_session("silent-override", tmp_path)
    argv = list(demo.proc.args)
    session.server_port = int(argv[argv.index("--port") + 1])
    return demo, session


def panel_text(app) -> str:
    return str(app.dashboard.query_one(SpecPanel).render())


async def test_baseline_on_the_panel_and_bench_from_the_screen(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    demo, session = demo_session(tmp_path)
    try:
        # the demo's own simulator baseline: 90 tok/s for one request without speculation, in the client's
        # clock (#23): the session's simulator runs at time scale 40, a GPU 40x faster
        app = SpectuiApp(session, baseline_tps=BaselineTps(90.0 * 40, running=1), baseline_source="simulator")
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.dashboard
            await wait_for(lambda: "vs no speculation" in panel_text(app), pilot)
            text = panel_text(app)
            assert "×0." in text and "(simulator)" in text  # ~64 tok/s against 90 (x40): below 1
            await wait_for(lambda: any(d.rule == "SPEC026" for d in app.cockpit.diagnoses), pilot)
            spec026 = next(d for d in app.cockpit.diagnoses if d.rule == "SPEC026")
            assert "3600.0 tok/s baseline" in spec026.message
            log = dash.query_one("LogView")
            before = log.last_line_no
            await pilot.press("b")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, BenchScreen)
            assert not screen.started  # `b` opens the form (#24): nothing is sent before enter
            await pilot.press("enter")
            await wait_for(lambda: screen.result is not None or screen.error is not None, pilot, timeout=120)
            assert screen.error is None, screen.error
            shown = str(screen.query_one("#bench-result").render())
            assert "output tok/s" in shown and "accept len" in shown and "×" in shown and "given" in shown
            assert screen.result["spec"]["accept_len"] > 1.0
            assert log.last_line_no > before  # the log kept flowing while the bench ran
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is dash
            await pilot.press("q")
    finally:
        demo.stop_sim()


def test_a_recorded_no_spec_bench_is_the_cockpit_baseline(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    from spectui.core.launch import parse_command
    from spectui.ops.bench.run import bench_history_path

    path = bench_history_path()
    path.parent.mkdir(parents=True)
    rows = [{"id": "a", "host": "local", "model": "other", "result": {"server": {"speculative": None},
             "workload": {"concurrency": 4}, "output_tokens_per_s": 500.0}},
            {"id": "b", "host": "local", "model": "/m/llama", "result": {"server": {"speculative": None},
             "workload": {"concurrency": 8}, "output_tokens_per_s": 812.5}},
            {"id": "c", "host": "local", "model": "/m/llama", "result": {"server": {"speculative": {"x": 1}},
             "workload": {"concurrency": 8}, "output_tokens_per_s": 900.0}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    class S:
        host = type("H", (), {"name": "local"})()
        label, replay = "local", False
        launch = parse_command("python -m sglang.launch_server --model-path /m/llama --speculative-algorithm EAGLE3")

    kw = cockpit_baseline(S(), None, None)
    assert kw["baseline_source"] == "history" and kw["baseline_tps"] == 812.5 and kw["baseline_tps"].running == 8
    assert cockpit_baseline(S(), 70.0, None) == {"baseline_tps": 70.0, "baseline_source": "given"}
