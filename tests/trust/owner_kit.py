"""A real server process owned by another local user, for the owner tests (#26): the user is created with
useradd when absent (the tests run as root, here and in CI), the server is a stand-in SGLang run with the
system's python as that user (setpriv), from its own folder, with its own environment."""

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
from pathlib import Path

import pytest

USER = "spectui-t26"
# Answers /health 200 on its --port, and logs the server_args= line SGLang logs at start (what a gone
# server's command is rebuilt from when nothing else is known of it).
STUB = """import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
print(f"server_args=ServerArgs(model_path='/m', host='127.0.0.1', port={port})", flush=True)
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


def health(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
            return resp.status == 200
    except Exception:
        return False


def alive(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0].startswith("Z")
    except FileNotFoundError:
        return False


def uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[2])
    raise AssertionError("no Uid line")


def kill_group(pid: int) -> None:
    """SIGKILL the server's group and wait until it is gone (a crash, as the cockpit sees one)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.02)


@contextlib.contextmanager
def owned_server() -> Iterator[tuple[pwd.struct_passwd, Path, int, int]]:
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
    from spectui.commands.demo.simrun import free_port

    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "PYTHONPATH": str(root / "stub"), "OWNER_MARK": "theirs"}
    out = subprocess.run(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "sh", "-c",
         'cd "$1" && setsid nohup "$2" -m sglang.launch_server --model-path /m --port "$3" > server.log 2>&1 '
         '< /dev/null & echo $!', "sh", str(root), python, str(port)],
        capture_output=True, text=True, check=True, env=env)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 20
    while not health(port):
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
