"""Child Python processes never run code from the working directory: the demo's simulator and serve's
viewer are started with `python -P`, so a planted `spectui/` package in the cwd is not imported.

The planted package writes a marker file the moment it is imported (as `spectui`, `spectui.sim` or
`spectui.__main__`); the real processes are started from that directory and the marker must not appear."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

PLANT = "open({marker!r}, 'a').write(__name__ + '\\n')\n"


def plant(cwd: Path) -> Path:
    marker = cwd / "PLANTED-RAN"
    pkg = cwd / "spectui"
    (pkg / "sim").mkdir(parents=True)
    for f in (pkg / "__init__.py", pkg / "__main__.py", pkg / "sim" / "__init__.py", pkg / "sim" / "__main__.py"):
        f.write_text(PLANT.format(marker=str(marker)))
    return marker


def test_demo_simulator_does_not_import_a_spectui_folder_in_the_cwd(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from spectui.commands.demo.simrun import DemoRun
    from spectui.core.launch import flag_value
    from spectui.sim.scenarios import SCENARIOS

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = plant(cwd)
    monkeypatch.chdir(cwd)
    demo = DemoRun(SCENARIOS["healthy"], version=None, time_scale=40.0, duration=None,
                   log_path=str(tmp_path / "server.log"))
    demo.start_sim()
    try:
        assert demo.proc is not None
        port = int(flag_value(demo.sim_argv, "--port") or 0)
        deadline = time.monotonic() + 20
        while True:  # the real simulator listens; the planted one would only write its marker and exit
            assert demo.proc.poll() is None, (tmp_path / "server.log").read_text()[-500:]
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the simulator never listened"
                time.sleep(0.05)
        assert "-P" in demo.sim_argv[:2]
    finally:
        demo.stop_sim()
    assert not marker.exists(), marker.read_text()


def test_serve_viewer_command_does_not_import_a_spectui_folder_in_the_cwd(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from spectui.commands.serve import viewer_command

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = plant(cwd)
    monkeypatch.setenv("PYTHONPATH", "")  # set by viewer_command in this process's environment
    command = viewer_command()
    for var in ("SPECTUI_SERVE_SOCKET", "SPECTUI_SERVE_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    # textual-serve runs the command through a shell in whatever directory it was started from.
    res = subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert not marker.exists(), marker.read_text()
    assert "spectui serve --viewer" in res.stderr  # the real viewer ran, and said it has no hub to attach to
    assert res.returncode != 0
