"""`spectui fleet` through a real Prometheus scraping a real SGLang's /metrics, and `spectui serve` opening the
cockpit of that server over HTTP (its page, token cookie, and the cockpit process it starts)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from realkit import RealServer, chat, free_port

PROMETHEUS = os.environ.get("SPECTUI_TEST_PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"


@pytest.fixture(scope="module")
def srv(kit_server: RealServer) -> RealServer:
    return kit_server


def test_fleet_lists_the_real_server_from_prometheus(srv: RealServer, tmp_path: Path) -> None:
    if not Path(PROMETHEUS).exists():
        pytest.fail("prometheus is not installed: apt-get install prometheus (.ci/run does this)")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                      f"scrape_configs:\n  - job_name: sglang\n    static_configs:\n"
                      f"      - targets: ['127.0.0.1:{srv.port}']\n")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for text in ("hello world the quick brown fox", "the quick brown fox jumps over the lazy dog"):
            chat(srv.port, text, max_tokens=48)
        end = time.monotonic() + 90
        found: list[dict] = []
        while time.monotonic() < end:
            out = subprocess.run([sys.executable, "-m", "spectui.cli", "fleet", "--prometheus",
                                  f"http://127.0.0.1:{port}", "--json"], capture_output=True, text=True, timeout=60)
            if out.returncode in (0, 1):  # 1: some instance has an error-severity diagnosis
                found = [i for i in json.loads(out.stdout)["instances"] if i["instance"] == f"127.0.0.1:{srv.port}"]
                if found and found[0].get("accept_len"):
                    break
            time.sleep(2)
        assert found, "the real server is not listed"
        inst = found[0]
        assert inst["speculative"] is True and 1.0 <= inst["accept_len"] <= 4.0, inst
        assert inst["ceiling"] == 4, inst  # NGRAM: 0 steps exported, 4 draft tokens verified
        # Prometheus's own target is no SGLang instance: only what exports SGLang's families is listed.
        assert all(i["job"] == "sglang" for i in json.loads(out.stdout)["instances"])
    finally:
        os.killpg(prom.pid, signal.SIGTERM)
        prom.wait(timeout=15)


def test_serve_opens_the_cockpit_of_the_real_server(srv: RealServer) -> None:
    (pid,) = srv.main_pids()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spectui.cli", "serve", "local", "--pid", str(pid), "--port",
                             str(port), "--read-only"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        url = None
        end = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < end and url is None:
            line = proc.stdout.readline()
            if "http://" in line and "token=" in line:
                url = line[line.index("http://"):].split()[0]
        assert url, "serve printed no address"

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(url, timeout=30)
            raise AssertionError("the token URL should answer a redirect to the clean address")
        except urllib.error.HTTPError as exc:
            assert exc.code == 303 and "token=" not in (exc.headers.get("Location") or "")
            cookie = exc.headers.get("Set-Cookie") or ""
            assert "HttpOnly" in cookie
        req = urllib.request.Request(url.split("?")[0], headers={"Cookie": cookie.split(";")[0]})
        with urllib.request.urlopen(req, timeout=30) as resp:
            page = resp.read().decode()
        assert resp.status == 200 and "<html" in page.lower()
        assert "fonts.googleapis" not in page  # nothing loaded from outside
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
