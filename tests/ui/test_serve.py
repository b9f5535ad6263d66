"""`spectui serve` in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright against a
real simulator. The token is required (403 without it, or with a wrong one, for the page, its scripts and
the websocket); with it the cockpit appears and shows the accept length; two viewers share ONE tail held by
the serve process (its viewer processes open no log)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402

pytestmark = pytest.mark.timeout(180)
CHROMIUM = os.environ.get("SPECTUI_TEST_CHROMIUM", "/usr/bin/chromium")
# As the machine notes say: root needs --no-sandbox; no background networking on a closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
EAGLE = ["--model-path", "/models/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]
ANSI = re.compile(rb"\x1b\[[0-9;?$]*[A-Za-z]|\x1b\][^\x07]*\x07")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def opened(pid: int, path: str) -> int:
    n = 0
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                n += os.readlink(fd) == path
    return n


@pytest.fixture
def served(tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium is not installed ({CHROMIUM}): apt-get install chromium")
    lab = SimLab(tmp_path, free_port())
    lab.start(EAGLE, log="server.log", env=SIM_FAST_ENV)
    proc = None
    try:
        wait_health(lab.port)
        log = str(tmp_path / "server.log")
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "spectui", "serve", f"local:{log}", "--port", str(port)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = proc.stdout.readline()
        m = re.match(r"spectui serve: (http://127\.0\.0\.1:(\d+)/\?token=(\S+))$", line.strip())
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        assert int(m[2]) == port
        yield m[1], f"http://127.0.0.1:{port}", m[3], proc, log
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        lab.cleanup()


def test_without_the_token_every_request_is_refused(served) -> None:
    url, base, token, _proc, _log = served
    wrong = token[:-1] + ("y" if token.endswith("x") else "x")
    for path in ("/", "/ws", "/static/js/textual.js", "/download/x", f"/?token={wrong}"):
        r = httpx.get(base + path, timeout=10)
        assert r.status_code == 403, (path, r.status_code)
        assert token not in r.text
    r = httpx.get(url, timeout=10)  # the printed URL: redirected to the page without the token (#26)
    assert r.status_code == 303 and token not in r.headers["location"]
    assert r.cookies.get("spectui_token") == token  # later requests of this page (scripts, websocket)
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    r = httpx.get(base + r.headers["location"], cookies={"spectui_token": token}, timeout=10)
    assert r.status_code == 200 and "textual" in r.text.lower()
    r = httpx.get(base + "/static/js/textual.js", cookies={"spectui_token": token}, timeout=10)
    assert r.status_code == 200
    r = httpx.get(base + "/ws", cookies={"spectui_token": token}, headers={"Origin": "http://evil.example"},
                  timeout=10)
    assert r.status_code == 403  # a websocket opened from another site


def test_one_of_several_servers_on_a_host_is_served_by_pid(tmp_path) -> None:
    """As connect: --pid picks the server on a host running several; with several targets it is refused."""
    labs = [SimLab(tmp_path / n, free_port()) for n in ("a", "b")]
    proc = None
    try:
        for lab in labs:
            lab.root.mkdir()
        pids = [lab.start(EAGLE, log="server.log", env=SIM_FAST_ENV) for lab in labs]
        for lab in labs:
            wait_health(lab.port)
        refused = subprocess.run([sys.executable, "-m", "spectui", "serve", "local", "local", "--pid", str(pids[1])],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and "--pid names one server" in refused.stderr
        proc = subprocess.Popen([sys.executable, "-m", "spectui", "serve", "local", "--pid", str(pids[1]), "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = proc.stdout.readline()
        m = re.match(r"spectui serve: (http://127\.0\.0\.1:\d+/\?token=\S+)$", line.strip())
        assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
        deadline = time.monotonic() + 20  # the serve process holds the one tail: of b's log, not a's
        while not opened(proc.pid, str(labs[1].root / "server.log")):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        assert not opened(proc.pid, str(labs[0].root / "server.log"))
        first = httpx.get(m[1], timeout=10)  # the token moves to a cookie: 303 to the clean address, then 200
        assert first.status_code == 303 and "token=" not in first.headers["location"]
        assert httpx.get(m[1], timeout=10, follow_redirects=True).status_code == 200
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        for lab in labs:
            lab.cleanup()


async def test_the_cockpit_in_chromium_shows_the_accept_length_and_viewers_share_one_tail(served) -> None:
    from playwright.async_api import async_playwright

    url, base, _token, proc, log = served
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            refused = await (await browser.new_page()).goto(base + "/")
            assert refused.status == 403

            async def viewer() -> list[bytes]:
                page = await browser.new_page(viewport={"width": 1400, "height": 900})
                frames: list[bytes] = []
                page.on("websocket", lambda ws: ws.on(
                    "framereceived", lambda f: frames.append(f if isinstance(f, bytes) else f.encode())))
                response = await page.goto(url)
                assert response.status == 200
                return frames

            async def accept_len(frames: list[bytes], timeout: float = 60) -> float:
                end = time.monotonic() + timeout
                while time.monotonic() < end:
                    text = ANSI.sub(b"", b"".join(frames))
                    m = re.search(rb"accept len ([0-9]+\.[0-9]+)", text)  # the speculative panel's first line
                    if m:
                        return float(m[1])
                    await asyncio.sleep(0.25)
                raise AssertionError(f"no accept len on screen: {ANSI.sub(b'', b''.join(frames))[-800:]!r}")

            first, second = await viewer(), await viewer()
            shown = [await accept_len(first), await accept_len(second)]
            logged = [float(x) for x in re.findall(r"accept len: ([0-9.]+)", Path(log).read_text())]
            assert logged and all(min(logged) - 0.01 <= a <= max(logged) + 0.01 for a in shown), (shown, logged[-5:])
            assert all(a > 2.0 for a in shown)  # α 0.8, steps 3: well above 1
            viewers = [pid for pid in descendants(proc.pid) if b"--viewer" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            assert len(viewers) >= 2  # one app process per visit (textual-serve)
            assert all(opened(pid, log) == 0 for pid in viewers)  # they follow the hub, not the log
            assert opened(proc.pid, log) == 1  # ONE tail, in the serve process
        finally:
            await browser.close()


async def test_a_viewer_app_on_the_hub_is_read_only_and_relaunch_opens_disabled(tmp_path) -> None:
    # The viewer process's app, in this process (Pilot), on a hub over a recorded simulator log.
    from spectui.commands.serve import viewer_app
    from spectui.ui.multi.app import TabSpec
    from spectui.ui.multi.hub import HubServer, fetch_tabs
    from spectui.ui.session import Session, read_recorded_log, replay_lines

    lines = read_recorded_log(str(Path(__file__).parent / "data" / "silent-override-sim.log"))
    session = Session(label="gpu1", log_path="server.log", tail_factory=replay_lines(lines, chunk=50),
                      probe_gpus=False)
    hub = HubServer([TabSpec("gpu1", session)], str(tmp_path / "hub.sock"), "t0ken")
    await hub.start()
    try:
        with pytest.raises(ValueError):
            await fetch_tabs(hub.path, "wrong")  # a wrong token gets nothing back
        tabs = await fetch_tabs(hub.path, "t0ken")
        assert [t["label"] for t in tabs] == ["gpu1"]
        app = viewer_app(tabs, hub.path, "t0ken")
        async with app.run_test(size=(120, 40)) as pilot:
            dash = app.dashboard
            for _ in range(200):
                await pilot.pause(0.05)
                if dash.query_one("LogView").last_line_no >= len(lines):
                    break
            assert dash.query_one("LogView").last_line_no == len(lines)
            assert app.session.read_only and app.session.host is None
            await pilot.press("r")
            await pilot.pause()
            assert type(app.screen).__name__ == "RelaunchScreen" and app.screen.query_one("#go").disabled
    finally:
        await hub.close()
