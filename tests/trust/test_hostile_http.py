"""Hostile HTTP servers on 127.0.0.1 (http.server in a thread): an endless answer, a gzip bomb, an answer
trickled a byte at a time (body or headers), deeply nested JSON. ServerProbe (record, relaunch, inspect's
server reads) and the Prometheus client (fleet) refuse each with one line, within a bounded time and
without memory growing; `spectui fleet` exits with one line."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

import pytest
from trust_kit import http_server, send

from spectui.core import limits as lim
from spectui.errors import ProbeError
from spectui.fleet import FleetInputError, PrometheusClient, PrometheusError
from spectui.sources.http import ServerProbe
from spectui.sources.local import LocalHost

STOP = threading.Event()


def _endless(h: BaseHTTPRequestHandler) -> None:
    """200, chunked, a megabyte after another for ever (until the client hangs up)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    block = b'{"a": "' + b"x" * (1 << 20) + b'", '
    for _ in range(4096):  # 4 GiB at most: the client must stop long before
        h.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))


_BOMB = b""


def _trickle_body(h: BaseHTTPRequestHandler) -> None:
    """Headers at once, then one byte of the body every 0.3 s: each read is quick, the answer never ends."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "1000000")
    h.end_headers()
    for _ in range(200):
        if STOP.is_set():
            return
        h.wfile.write(b" ")
        h.wfile.flush()
        time.sleep(0.3)


def _trickle_headers(h: BaseHTTPRequestHandler) -> None:
    """The status line and headers one byte every 0.3 s, never finished."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200:
        if STOP.is_set():
            return
        h.wfile.write(bytes([byte]))
        h.wfile.flush()
        time.sleep(0.3)


DEEP = b"[" * 50_000 + b"]" * 50_000


def _deep(h: BaseHTTPRequestHandler) -> None:
    send(h, DEEP if not urlsplit(h.path).path.startswith("/api") else b'{"status": "success", "data": ' + DEEP + b"}")


@pytest.fixture(autouse=True)
def _stop_tricklers():
    STOP.clear()
    yield
    STOP.set()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def _probe(url: str, what: str, **kw) -> ProbeError:
    probe = ServerProbe(LocalHost(), _port(url), timeout=1.0, deadline=2.0, **kw)
    try:
        with pytest.raises(ProbeError) as caught:
            await (probe.server_info() if what == "info" else probe.metrics())
        return caught.value
    finally:
        await probe.close()


@pytest.mark.parametrize("what", ["info", "metrics"])
async def test_an_endless_answer_is_refused_at_its_cap(what: str) -> None:
    with http_server(_endless) as url:
        start = time.monotonic()
        err = await _probe(url, what)
    assert "more than" in str(err) and "MiB: refused" in str(err) and "\n" not in str(err)
    assert time.monotonic() - start < 10


async def test_a_gzip_bomb_counts_at_its_inflated_size() -> None:
    global _BOMB
    _BOMB = gzip.compress(b"[" + b" " * (lim.HTTP_JSON_BYTES + (4 << 20)) + b"]", 9)
    assert len(_BOMB) < 200_000

    def handler(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(_BOMB)))
        h.end_headers()
        h.wfile.write(_BOMB)

    with http_server(handler) as url:
        err = await _probe(url, "info")
    assert f"more than {lim.HTTP_JSON_BYTES >> 20} MiB" in str(err)


@pytest.mark.parametrize("handler", [_trickle_body, _trickle_headers], ids=["body", "headers"])
async def test_a_trickled_answer_ends_at_the_total_deadline(handler) -> None:
    with http_server(handler) as url:
        start = time.monotonic()
        err = await _probe(url, "info")
        took = time.monotonic() - start
    assert "timed out" in str(err) and "within 2 s" in str(err)
    assert took < 4, took  # the deadline (2 s), not the per-read timeout times the bytes


async def test_deeply_nested_server_info_is_one_line() -> None:
    with http_server(_deep) as url:
        err = await _probe(url, "info")
    assert "nested deeper than" in str(err) and "\n" not in str(err)


def test_prometheus_client_caps_deadlines_and_depth() -> None:
    with http_server(_endless) as url, pytest.raises(PrometheusError, match="more than .* MiB: refused"):
        PrometheusClient(url, timeout=2, max_bytes=8 << 20).query("up")
    for handler in (_trickle_body, _trickle_headers):
        with http_server(handler) as url:
            start = time.monotonic()
            with pytest.raises(PrometheusError, match="did not answer .* in time"):
                PrometheusClient(url, timeout=1, deadline=2).query("up")
            assert time.monotonic() - start < 4
    with http_server(_deep) as url, pytest.raises(FleetInputError, match="does not look like a Prometheus"):
        PrometheusClient(url, timeout=2).query("up")


def test_fleet_against_a_trickling_prometheus_ends_in_one_line() -> None:
    with http_server(_trickle_body) as url:
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "spectui", "fleet", "--prometheus", url, "--timeout", "1"],
                             capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})
        took = time.monotonic() - start
    assert out.returncode == 1, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "did not answer" in out.stderr
    assert took < 15, took


def test_a_deep_prometheus_answer_is_exit_2() -> None:
    with http_server(_deep) as url:
        out = subprocess.run([sys.executable, "-m", "spectui", "fleet", "--prometheus", url, "--json"],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
