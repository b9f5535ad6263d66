"""A real process that looks like `python -m sglang.launch_server …` to discovery, with a fake `sglang`
package on ITS PYTHONPATH only (spectui's own environment has none): its launch_server answers /server_info
with a release spectui does not ship, its srt/server_args.py registers a flag only that release has."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

FUTURE_FLAG = "--speculative-future-knob"

LAUNCH = '''
import http.server, json, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"version": VERSION}).encode()
        self.send_response(200 if self.path == "/server_info" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
print("stub server up", flush=True)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
'''

# 0.5.99 = the newest bundled release's flags (re-registered from flags.json, action classes and type
# names kept, as a real newer SGLang's add_cli_args would register them) + one flag only it has.
SERVER_ARGS = '''
import argparse, json, os
_HERE = os.path.dirname(os.path.abspath(__file__))
_BUILTIN = {"int": int, "float": float, "str": str}


def _named(name):
    def conv(v):
        return v
    conv.__name__ = name
    return conv


class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        print("import-time chatter on stdout")
        with open(os.path.join(_HERE, "flags.json")) as fh:
            flags = json.load(fh)
        for f in flags:
            kw = {"dest": f["dest"], "default": f["default"]}
            act = f["action"]
            if act == "_StoreTrueAction":
                kw["action"] = "store_true"
            elif act == "BooleanOptionalAction":
                kw["action"] = argparse.BooleanOptionalAction
            else:
                if act != "_StoreAction":
                    kw["action"] = type(act, (argparse.Action,), {"__call__": lambda *a, **k: None})
                if f["type"]:
                    kw["type"] = _BUILTIN.get(f["type"]) or _named(f["type"])
                if f["nargs"] is not None:
                    kw["nargs"] = f["nargs"]
                if f["choices"] is not None:
                    kw["choices"] = f["choices"]
            parser.add_argument(*f["flags"], **kw)
        parser.add_argument("FUTURE", type=int, default=None)
'''.replace("FUTURE", FUTURE_FLAG)


def _flags_json(version: str = "0.5.23") -> str:
    from spectui.core.launch import load_catalogue

    return json.dumps([{"flags": list(s.flags), "dest": s.dest, "action": s.action, "type": s.type,
                        "nargs": s.nargs, "default": s.default,
                        "choices": list(s.choices) if s.choices is not None else None}
                       for s in load_catalogue(version).specs])


def fake_sglang(root: Path, version: str = "0.5.99", *, with_server_args: bool = True) -> Path:
    """A site dir holding `sglang` (launch_server stub, version, and optionally srt/server_args)."""
    pkg = root / "site" / "sglang"
    (pkg / "srt").mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "version.py").write_text(f"__version__ = {version!r}\n")
    (pkg / "launch_server.py").write_text(f"VERSION = {version!r}\n" + LAUNCH)
    if with_server_args:
        (pkg / "srt" / "__init__.py").write_text("")
        (pkg / "srt" / "server_args.py").write_text(SERVER_ARGS)
        (pkg / "srt" / "flags.json").write_text(_flags_json())
    return root / "site"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def stub_server(site: Path, port: int, log: Path, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "/m", "--port", str(port), *extra]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                env={**env, "PYTHONPATH": str(site)}, start_new_session=True, cwd=log.parent)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=1).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"stub server did not come up: {log.read_text()}") from None
                time.sleep(0.05)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def spectui(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    """spectui in a subprocess WITHOUT the fake package on its path: only the server's environment has it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=120,
                          env=env)
