"""Relaunch acts as the server's owner or not at all.

A real server process owned by another local user (created with useradd when absent; the tests run as
root, here and in CI) is found in /proc: the plan names its owner; a relaunch as root is refused with
the reason and how to do it as that user, changing nothing; with --as-owner the stop and the start run
as that user through the host's own mechanism (sudo -n -u, or runuser as root without sudo), and the new
server runs as that user, with the old environment and directory."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore
from spectui.ops.plan import Edits, build_plan
from spectui.ops.relaunch import RelaunchOptions, execute
from spectui.sources.discover import discover
from spectui.sources.local import LocalHost

USER = "spectui-t26"
FAST = RelaunchOptions(force=True, stop_grace_s=5, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5,
                       health_timeout_s=30)
# A stand-in SGLang the other user can run with the system's python (root's own interpreter lives under
# /root, which other users cannot enter): answers /health 200 on its --port.
STUB = """import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
print("stub up", flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def other_user() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("needs root: to create a second user and start a process as it")
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(USER)
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not available: no second local user can be created for this test")
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh", USER], check=True,
                   capture_output=True)
    return pwd.getpwnam(USER)


def _health(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
            return resp.status == 200
    except Exception:
        return False


def _alive(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0].startswith("Z")
    except FileNotFoundError:
        return False


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])
    raise AssertionError("no Uid line")


@pytest.fixture
def owned() -> Iterator[tuple[pwd.struct_passwd, Path, int, int]]:
    """(user, its folder, port, pid): a stub server started by the other user, in its own folder."""
    user = other_user()
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python3 that another user can run")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not available: the server cannot be started as the other user")
    root = Path(tempfile.mkdtemp(prefix="spectui-owner-"))
    (root / "stub" / "sglang").mkdir(parents=True)
    (root / "stub" / "sglang" / "__init__.py").write_text("")
    (root / "stub" / "sglang" / "launch_server.py").write_text(STUB)
    for path in [root, *root.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid)
    from spectui.commands.demorun import free_port

    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "PYTHONPATH": str(root / "stub"), "OWNER_MARK": "theirs"}
    out = subprocess.run(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "sh", "-c",
         'cd "$1" && setsid nohup "$2" -m sglang.launch_server --model-path /m --port "$3" > server.log 2>&1 '
         '< /dev/null & echo $!', "sh", str(root), python, str(port)],
        capture_output=True, text=True, check=True, env=env)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 20
    while not _health(port):
        assert time.monotonic() < deadline, (root / "server.log").read_text()
        time.sleep(0.05)
    try:
        yield user, root, port, pid
    finally:
        for proc in Path("/proc").iterdir():  # every process the user runs from that folder (the new server)
            with contextlib.suppress(OSError, ValueError):
                if proc.name.isdigit() and os.readlink(proc / "cwd") == str(root):
                    os.killpg(os.getpgid(int(proc.name)), signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


async def _plan(pid: int):  # type: ignore[no-untyped-def]
    server = next(s for s in await discover(LocalHost()) if s.pid == pid)
    return server, build_plan(server, Edits(), host_name="local", now=datetime.now())


async def test_a_server_of_another_user_is_refused_with_the_reason_and_the_way(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user, root, port, pid = owned
    server, plan = await _plan(pid)
    assert (server.uid, server.user) == (user.pw_uid, USER)
    assert f"owner    {USER} (uid {user.pw_uid})" in plan.render()
    assert plan.to_json()["owner"] == {"user": USER, "uid": user.pw_uid}
    with pytest.raises(RelaunchError) as err:
        await execute(LocalHost(), plan, FAST, history=HistoryStore(tmp_path / "h.jsonl"))
    msg = str(err.value)
    assert f"belongs to {USER} (uid {user.pw_uid})" in msg and "acts as root (uid 0)" in msg
    assert "nothing was changed" in msg and f"sudo -u {USER} spectui relaunch" in msg and "--as-owner" in msg
    assert "\n" not in msg
    assert _health(port) and _uid_of(pid) == user.pw_uid  # untouched
    assert sorted(p.name for p in root.iterdir()) == ["server.log", "stub"]  # no new log, nothing started


async def test_as_owner_stops_and_starts_it_as_that_user(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user, root, port, pid = owned
    _, plan = await _plan(pid)
    opts = RelaunchOptions(**{**{f: getattr(FAST, f) for f in FAST.__dataclass_fields__}, "as_owner": True})
    steps: list[str] = []
    result = await execute(LocalHost(), plan, opts, history=HistoryStore(tmp_path / "h.jsonl"),
                           on_progress=lambda p: steps.append(p.message))
    assert result.new.healthy, (result.message, steps)
    new = result.new.pid
    assert new is not None and new != pid and not _alive(pid)
    assert _uid_of(new) == user.pw_uid  # the owner's, not root's
    assert os.readlink(f"/proc/{new}/cwd") == str(root)
    env = dict(e.split("=", 1) for e in Path(f"/proc/{new}/environ").read_bytes().decode().split("\0") if e)
    assert env["OWNER_MARK"] == "theirs" and env["HOME"] == str(root)
    assert os.stat(plan.log_path).st_uid == user.pw_uid  # the new log is the owner's file
    assert any(f"acting as the server's owner {USER}" in m for m in steps)
