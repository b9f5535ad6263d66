"""The cockpit attached to a server that has run for a while: its log's server_args line is far above the
backfill. The effective config still comes from that line (not the resolver's guess), and the lines the
pane shows carry their own kinds (the pipeline numbers lines as the file does, not from 1).

Seen on the real server in CI: a module-scoped server had logged more than a backfill's worth of lines,
and the config panel's "effective" column went blank. Real simulator, real file, LocalHost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ops.ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, free_port, wait_health

from spectui.core.launch import parse_command
from spectui.sources.discover import pick_server
from spectui.sources.local import LocalHost
from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session
from spectui.ui.widgets.log_view import LogView

BACKFILL = 200  # sources.tail.LogTail's default


async def test_attached_late_the_cockpit_reads_the_launch_line_and_colours_the_right_lines(tmp_path: Path) -> None:
    lab = SimLab(tmp_path, free_port())
    try:
        pid = lab.start(SEED_FLAGS, env={**SIM_FAST_ENV, "SPECTUI_SIM_TRAFFIC": "16"})
        await asyncio.to_thread(wait_health, lab.port)
        log = lab.root / "server.log"
        loop = asyncio.get_running_loop()
        end = loop.time() + 120
        while log.read_bytes().count(b"\n") < 3 * BACKFILL:
            assert loop.time() < end, "the simulator did not log enough lines"
            await asyncio.sleep(0.2)
        args_line = next(n for n, t in enumerate(log.read_text().splitlines(), 1) if "server_args=" in t)
        assert args_line < BACKFILL  # far above what a backfill reads

        host = LocalHost()
        server = await pick_server(host, pid)
        session = Session(label="local", log_path=server.log_path, host=host, server=server,
                          launch=parse_command(list(server.argv)), server_port=server.port, probe_gpus=False)
        app = SpectuiApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            dash = app.dashboard
            view = dash.query_one(LogView)
            end = loop.time() + 60
            while not (view.line_count >= BACKFILL and any("Decode batch" in t for t in view._texts)):
                assert loop.time() < end, "no backfill reached the pane"
                await pilot.pause(0.2)
            await dash.wait_processed()
            assert view._first_no > args_line  # the pane starts mid-file; the launch line is not shown in it

            config = dash.cockpit.config_view()
            assert config.effective_source == "log"  # from the server's own line, not "predicted"
            tokens = next(r for r in config.rows if r.key == "speculative_num_draft_tokens")
            assert (tokens.requested, tokens.effective) == (16, 2)  # the seed incident's silent override

            rows = list(zip(view._texts, view._kinds, strict=True))
            decode = [t for t, k in rows if k == "decode"]
            assert decode and all("Decode batch" in t for t in decode)
            assert all(k == "decode" for t, k in rows if "Decode batch" in t)
            assert all(k == "prefill" for t, k in rows if "Prefill batch" in t)
            await pilot.press("q")
    finally:
        lab.cleanup()
