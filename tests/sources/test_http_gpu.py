"""ServerProbe against real HTTP servers (the simulator; a stdlib server for old releases), directly and
through an SSH port forward; the GPU poller with and without nvidia-smi."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from procs import free_port, started, wait_for_text
from sshd_harness import Sshd

from spectui.errors import ProbeError
from spectui.sim.scenarios import SCENARIOS
from spectui.sources.gpu import query_gpus
from spectui.sources.http import ServerProbe, metric_value, spec_accept_length
from spectui.sources.local import LocalHost
from spectui.sources.ssh import SSHHost, SSHOptions


class OldSGLang(BaseHTTPRequestHandler):
    """A pre-0.5.6 server: no /server_info (404), /get_server_info answers; no /metrics."""

    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        OldSGLang.hits.append(self.path)
        if self.path == "/get_server_info":
            body = json.dumps({"version": "0.4.9", "internal_states": [{"avg_spec_accept_length": 2.5},
                                                                      {"avg_spec_accept_length": 3.5}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        elif self.path == "/health":
            body = b""
            self.send_response(200)
        else:
            body = b'{"detail":"Not Found"}'
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def old_server() -> Iterator[int]:
    OldSGLang.hits = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), OldSGLang)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(srv.server_address[1])
    finally:
        srv.shutdown()
        srv.server_close()


async def test_simulator_health_server_info_and_metrics(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    argv = [sys.executable, "-m", "spectui.sim", "--enable-metrics",
            *SCENARIOS["healthy"].argv(host="127.0.0.1", port=port)]
    knobs = SCENARIOS["healthy"].env(time_scale=30, traffic=8)  # SPECTUI_SIM_* variables
    with started(argv, log, env=knobs):
        wait_for_text(log, "Decode batch")
        probe = ServerProbe(LocalHost(), port)
        try:
            assert (await probe.health()).ok
            info = await probe.server_info()
            assert probe.info_path == "/server_info"
            assert info["port"] == port and str(info["speculative_algorithm"]).upper() == "EAGLE3"
            samples = await probe.metrics()
        finally:
            await probe.close()
    names = {s.name for s in samples}
    assert "sglang:num_running_reqs" in names
    assert metric_value(samples, "sglang:num_running_reqs") is not None


async def test_falls_back_to_get_server_info_only_on_404_and_remembers(old_server: int) -> None:
    probe = ServerProbe(LocalHost(), old_server)
    try:
        info = await probe.server_info()
        await probe.server_info()
        assert info["version"] == "0.4.9" and spec_accept_length(info) == 3.0
        assert OldSGLang.hits == ["/server_info", "/get_server_info", "/get_server_info"]
        with pytest.raises(ProbeError, match="--enable-metrics"):
            await probe.metrics()
    finally:
        await probe.close()


async def test_probe_through_an_ssh_port_forward(sshd: Sshd, old_server: int) -> None:
    host = SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))
    await host.connect()
    probe = ServerProbe(host, old_server)
    try:
        assert (await probe.health()).ok
        assert probe.base_url != f"http://127.0.0.1:{old_server}"  # went through the forward
        assert (await probe.server_info())["version"] == "0.4.9"
    finally:
        await probe.close()
        await host.close()


async def test_nothing_listening_is_a_probe_error_not_a_traceback() -> None:
    probe = ServerProbe(LocalHost(), free_port())
    try:
        health = await probe.health()
        assert not health.ok and health.status_code is None and "--server-port" in health.detail
        with pytest.raises(ProbeError):
            await probe.server_info()
    finally:
        await probe.close()


async def test_gpu_poller_without_and_with_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    gpus, msg = await query_gpus(LocalHost())
    assert gpus is None and "nvidia-smi not found" in msg
    # A stand-in nvidia-smi printing what the real one prints for this query (csv,noheader,nounits).
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\nprintf '0, NVIDIA H100 80GB HBM3, 97, 71234, 81559, 63, 512.30\\n"
                      "1, NVIDIA H100 80GB HBM3, [N/A], 1, 81559, 30, 70.1\\n'\n")
    os.chmod(script, 0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    gpus, msg = await query_gpus(LocalHost())
    assert msg == "" and gpus is not None and len(gpus) == 2
    assert (gpus[0].index, gpus[0].util_pct, gpus[0].mem_used_mib, gpus[0].power_w) == (0, 97.0, 71234.0, 512.3)
    assert gpus[1].util_pct is None
