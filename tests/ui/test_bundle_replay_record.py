"""The cockpit's `x`: a bundle of the followed (real, simulated) server recorded in a worker while the log
keeps flowing, saved under $XDG_STATE_HOME/spectui/bundles and said where; in a replay it says why not."""

from __future__ import annotations

import asyncio

from ops.ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health

from spectui.bundle import read_bundle
from spectui.sim.scenarios import SCENARIOS
from spectui.sources.discover import pick_server
from spectui.sources.local import LocalHost
from spectui.ui import recording
from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session


async def test_x_records_the_followed_server_without_stopping_the_log(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(recording, "RECORD_SECONDS", 1.5)
    lab = SimLab(tmp_path, free_port())
    try:
        pid = lab.start([*SCENARIOS["silent-override"].flags, "--api-key", "SECRETVALUE"],
                        env={**SIM_FAST_ENV, "HF_TOKEN": "hf_xxx"})
        await asyncio.to_thread(wait_health, lab.port)
        host = LocalHost(read_only=True)
        server = await pick_server(host, pid)
        session = Session(label="local", log_path=server.log_path, host=host, server=server, read_only=True,
                          server_port=server.port, probe_gpus=False)
        app = SpectuiApp(session)
        loop = asyncio.get_running_loop()
        async with app.run_test(size=(140, 40)) as pilot:
            log = app.dashboard.query_one("LogView")
            await pilot.press("x")
            before = log.last_line_no
            start = loop.time()
            while getattr(app, "last_bundle", None) is None:
                assert loop.time() - start < 60, "no bundle was saved"
                await pilot.pause(0.1)
            assert log.last_line_no > before  # the log kept flowing while it recorded
        path = app.last_bundle
        assert path.startswith(str(tmp_path / "state" / "spectui" / "bundles"))
        bundle = read_bundle(path)
        assert bundle.launch["pid"] == pid and len(bundle.server_info) >= 1
        assert b"SECRETVALUE" not in bundle.log_bytes and "hf_xxx" not in str(bundle.launch)
    finally:
        lab.cleanup()


async def test_x_in_a_replay_says_there_is_nothing_live(tmp_path) -> None:
    from spectui.ui.session import replay_lines

    session = Session(label="bundle", log_path="b", tail_factory=replay_lines(["x"]), replay=True,
                      probe_gpus=False, read_only=True)
    app = SpectuiApp(session)
    async with app.run_test() as pilot:
        await pilot.press("x")
        await pilot.pause()
        assert any("no live server" in str(n.message) for n in app._notifications)
