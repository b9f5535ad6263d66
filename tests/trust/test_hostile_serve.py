"""`spectui serve`'s page and gate: the printed `?token=` URL redirects to a clean URL setting the cookie
(the token leaves the address bar and history), the page loads nothing from outside (fonts included), and
a websocket is accepted only from this exact origin (scheme, host, port)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import aiohttp
import httpx
import pytest
from ops.ops_simlab import free_port  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    log = root / "server.log"
    log.write_text("[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/m')\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "serve", f"local:{log}", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=root)
    try:
        line = proc.stdout.readline()
        m = re.match(r"spectui serve: (http://127\.0\.0\.1:\d+/\?token=(\S+))$", line.strip())
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield m[1], f"http://127.0.0.1:{port}", m[2]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_the_token_moves_from_the_url_to_a_cookie(served) -> None:
    url, base, token = served
    r = httpx.get(url, timeout=10)
    assert r.status_code == 303
    assert r.headers["location"] == "/" and token not in r.headers["location"]
    cookie = r.headers["set-cookie"].lower()
    assert f"spectui_token={token.lower()}" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert r.headers.get("cache-control") == "no-store"
    other = httpx.get(base + f"/?token={token}&fontsize=20", timeout=10)  # other parameters are kept
    assert other.status_code == 303 and other.headers["location"] == "/?fontsize=20"
    page = httpx.get(base + "/", cookies={"spectui_token": token}, timeout=10)
    assert page.status_code == 200 and "textual" in page.text.lower() and token not in page.text


def test_the_page_loads_nothing_from_outside(served) -> None:
    _url, base, token = served
    page = httpx.get(base + "/", cookies={"spectui_token": token}, timeout=10).text
    assert "googleapis" not in page and "gstatic" not in page
    loads = re.findall(r"""(?:href|src)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""", page)
    urls = [a or b for a, b in loads]
    assert urls and all(u.startswith(base + "/") for u in urls), urls
    assert any("fonts/RobotoMono" in u for u in urls)
    for u in urls:  # each of them is there, behind the same gate
        assert httpx.get(u, cookies={"spectui_token": token}, timeout=10).status_code == 200, u
        assert httpx.get(u, timeout=10).status_code == 403, u


@pytest.mark.parametrize("origin", ["https://127.0.0.1:{port}", "http://evil.example", "http://127.0.0.1:1",
                                    "null"])
async def test_a_websocket_from_another_origin_is_refused(served, origin: str) -> None:
    _url, base, token = served
    port = base.rsplit(":", 1)[1]
    async with aiohttp.ClientSession(cookies={"spectui_token": token}) as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
            await http.ws_connect(base + "/ws", headers={"Origin": origin.format(port=port)})
    assert caught.value.status == 403


async def test_a_websocket_from_this_origin_opens(served) -> None:
    _url, base, token = served
    async with aiohttp.ClientSession(cookies={"spectui_token": token}) as http:
        ws = await http.ws_connect(base + "/ws", headers={"Origin": base})
        await ws.close()
