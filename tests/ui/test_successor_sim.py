"""Follow the server, not the pid: a relaunch by the CLI (`spectui relaunch local --pid P --set … --yes`)
while the cockpit follows a real simulator — the cockpit moves to the new pid and its new log, says so
(a toast and a marker line in the log pane), and the phase timeline shows both launches with durations."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402
from test_liveness_sim import FAST, connect_args, wait_for  # noqa: E402

from spectui.commands.connect import build_session  # noqa: E402
from spectui.ui.app import SpectuiApp  # noqa: E402
from spectui.ui.widgets.timeline import PhaseTimelineBar  # noqa: E402

pytestmark = pytest.mark.timeout(60)
EAGLE = ["--model-path", "/models/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]


def serving(dash) -> bool:
    u = dash.last_update
    return u is not None and u.snapshot is not None and u.snapshot.samples > 0


async def test_a_relaunch_by_the_cli_is_followed_to_the_new_pid_and_log(tmp_path) -> None:
    lab = SimLab(tmp_path, free_port())
    pid = lab.start(EAGLE, env=SIM_FAST_ENV)
    try:
        wait_health(lab.port)
        session = await build_session(connect_args("local", pid=pid))
        session.liveness = FAST
        old_log = session.log_path
        app = SpectuiApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.dashboard
            await wait_for(lambda: serving(dash) and dash.health is not None, pilot)
            env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
            relaunch = asyncio.create_task(asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "spectui", "relaunch", "local", "--pid", str(pid),
                                 "--set", "speculative-num-steps=2", "--set", "speculative-num-draft-tokens=3",
                                 # a slower start-up (still a few seconds) so its steps take measurable time
                                 "--set-env", "SPECTUI_SIM_TIME_SCALE=6", "--yes", "--json"], capture_output=True, text=True, timeout=50, env=env))
            await wait_for(lambda: session.pid != pid and dash.log_path != old_log, pilot, timeout=45)
            out = await relaunch
            assert out.returncode == 0, out.stderr[-2000:]
            import json

            result = json.loads(out.stdout)
            assert session.pid == result["new_pid"] and dash.log_path == result["log"]
            assert dash.successors == [result["new_pid"]]
            args = list(session.launch.args)  # the successor's own command line, edits included
            assert args[args.index("--speculative-num-steps") + 1] == "2"
            texts = list(dash.query_one("LogView")._texts)
            marker = [t for t in texts if "its successor pid" in t]
            assert marker and str(pid) in marker[0] and result["log"] in marker[0], texts[-5:]
            assert any("now following pid" in n.message for n in app._notifications)
            # The new server's start-up and serving come from its own log: a second launch in the timeline.
            await wait_for(lambda: serving(dash), pilot, timeout=30)
            await wait_for(lambda: "#2" in dash.query_one(PhaseTimelineBar).plain
                           and "serving" in dash.query_one(PhaseTimelineBar).plain.split("#2")[1], pilot)
            line = dash.query_one(PhaseTimelineBar).plain
            first, second = line.split("#2")
            assert "#1" in first and "stopped" in first and "serving" in first, line  # whole, or in short
            assert "loading" in second and "CUDA graphs" in second, line
            steps = dash.cockpit.timeline.steps
            assert {s.launch for s in steps} == {1, 2}
            startup = [s for s in steps if s.launch == 2 and s.name in ("loading", "kv", "graphs")]
            assert sum(s.duration(0.0) for s in startup) >= 1.0, [(s.name, s.duration(0.0)) for s in startup]
            assert all(s.end_wall is not None for s in startup)  # closed steps: fixed durations
            await wait_for(lambda: dash.health is not None and dash.health.state == "healthy"
                           and dash.health.pid == result["new_pid"], pilot, timeout=20)
            await pilot.press("q")
        await session.host.close()
    finally:
        lab.cleanup()
