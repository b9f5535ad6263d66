"""A server that sends one byte every few tenths of a second never trips a read timeout: `bench`'s per-request
total deadline (`--request-timeout`) ends such a request as RequestTimeout and the run ends with one clear
line, instead of hanging for ever (#26). The hostile server is a real HTTP server in its own process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import aiohttp
import pytest

from spectui.cli import main
from spectui.load.client import stream_request
from spectui.load.record import RequestRecord

pytestmark = pytest.mark.timeout(60)

# /health and /v1/models answer at once; a completion's headers come at once, then one byte of an event line
# every 0.3 s, without end (up to 10 minutes).
TRICKLE = textwrap.dedent("""
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a):
            pass
        def _json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def do_GET(self):
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "slow", "object": "model"}]})
            elif self.path == "/health":
                self._json(200, {})
            else:
                self._json(404, {"detail": "Not Found"})
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            try:
                for _ in range(2000):
                    self.wfile.write(b":")
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
""")


@pytest.fixture(scope="module")
def trickle_port() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-I", "-c", TRICKLE], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()


async def test_the_client_ends_a_trickling_answer_at_its_deadline(trickle_port: int) -> None:
    rec = RequestRecord(index=0, prompt_id="p0", endpoint="chat", warmup=False)
    t0 = time.monotonic()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=30)) as http:
        await asyncio.wait_for(stream_request(http, f"http://127.0.0.1:{trickle_port}/v1/chat/completions",
                                              {"stream": True}, rec, deadline_s=1.5), 20)
    took = time.monotonic() - t0
    assert rec.error == "RequestTimeout" and not rec.ok, rec
    assert "1.5 s" in (rec.error_detail or "") and "--request-timeout" in (rec.error_detail or "")
    assert 1.4 <= took < 5, took  # the bytes kept coming (every 0.3 s, under the 30 s read timeout)


def test_bench_ends_with_one_line_instead_of_hanging(trickle_port: int, capsys, tmp_path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    t0 = time.monotonic()
    code = main(["bench", "local", "--server-port", str(trickle_port), "--requests", "2", "--concurrency", "2",
                 "--warmup", "0", "--prompts", "chat", "--request-timeout", "2", "--json"])
    took = time.monotonic() - t0
    cap = capsys.readouterr()
    assert code == 1 and took < 20, (code, took, cap.err)
    out = json.loads(cap.out)
    assert out["requests"]["errors"] == {"RequestTimeout": 2} and out["workload"]["request_timeout_s"] == 2.0
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and "2 of 2 requests failed (RequestTimeout x2)" in err[0], cap.err


def test_a_warm_up_that_times_out_is_one_line_and_exit_1(trickle_port: int, capsys, tmp_path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    code = main(["bench", "local", "--server-port", str(trickle_port), "--requests", "1", "--prompts", "chat",
                 "--request-timeout", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "every warm-up request failed (RequestTimeout x1)" in err[0] and "within 1 s" in err[0], err


@pytest.mark.parametrize("value", ["0", "-3", "inf", "nan"])
def test_a_bad_request_timeout_is_exit_2(value: str, capsys) -> None:
    code = main(["bench", "local", "--server-port", "1", "--request-timeout", value])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--request-timeout" in err[0], err
