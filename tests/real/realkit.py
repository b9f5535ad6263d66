"""The real SGLang server kit (shared/real-sglang: a CPU build of upstream SGLang serving a tiny Llama with
random weights) as a test bed: where it is, whether it is built, and a server started the way an operator
starts one (`cd DIR && setsid serve.sh --port P … > server.log 2>&1 &`), stopped by its process group.

Nothing in spectui knows the kit: tests reach it through the paths here. A uniquely named module (not
`conftest`) so tests import it as `from realkit import …` (tests/real is on sys.path through pyproject.toml's pytest `pythonpath`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def kit_dir() -> Path:
    """shared/real-sglang: SPECTUI_REAL_SGLANG_KIT, else the `shared` folder beside the checkout."""
    given = os.environ.get("SPECTUI_REAL_SGLANG_KIT")
    return Path(given) if given else REPO.parent / "shared" / "real-sglang"


def prefix() -> Path:
    """Where build.sh put the build (its own default, or REAL_SGLANG_PREFIX as serve.sh reads it)."""
    given = os.environ.get("REAL_SGLANG_PREFIX")
    return Path(given) if given else Path.home() / ".cache" / "spectui-real-sglang"


def missing() -> str | None:
    """Why the tier cannot run here, or None when the kit is built."""
    serve = kit_dir() / "serve.sh"
    if not serve.is_file():
        return f"no real-SGLang kit at {kit_dir()} (set SPECTUI_REAL_SGLANG_KIT)"
    if not (prefix() / ".stamps" / "done").is_file():
        return f"the real-SGLang kit is not built: run {kit_dir() / 'build.sh'} (about 7 minutes, cached)"
    return None


AMX_SHIM = Path(__file__).parent / "amxshim"


def server_env() -> dict[str, str]:
    """The environment a test starts the kit's server with: this one, plus the AMX shim (amxshim/) on a CPU
    without AMX tiles, where SGLang would fall back to an attention backend that cannot run speculation."""
    env = dict(os.environ)
    try:
        has_amx = "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        has_amx = False
    if not has_amx:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(AMX_SHIM), env.get("PYTHONPATH", "")) if p)
    return env


def python() -> str:
    return str(prefix() / "venv" / "bin" / "python")


def model_dir() -> str:
    return str(prefix() / "models" / "tiny-llama")


def drafts_ready() -> Path:
    """The tiny EAGLE/EAGLE-3 drafts and the hot-token map (mkdraft.py; idempotent, made once)."""
    models = prefix() / "models"
    if not (models / "draft-eagle3" / "config.json").is_file() or not (models / "hot684x32.pt").is_file():
        subprocess.run([python(), str(kit_dir() / "mkdraft.py"), str(prefix())], check=True,
                       capture_output=True, timeout=600)
    return models


def get(port: int, path: str, *, timeout: float = 5, key: str | None = None) -> tuple[int | None, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - not answering (yet)
        return None, ""


def chat(port: int, text: str = "hello world the quick brown fox", *, max_tokens: int = 24,
         key: str | None = None, timeout: float = 120) -> dict:
    body = json.dumps({"model": "default", "messages": [{"role": "user", "content": text}],
                       "max_tokens": max_tokens, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def generate(port: int, text: str, *, max_tokens: int = 8, timeout: float = 60) -> tuple[int | None, str]:
    body = json.dumps({"text": text, "sampling_params": {"max_new_tokens": max_tokens}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except Exception as exc:  # noqa: BLE001 - the server died under the request
        return None, str(exc)


def alive(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0].startswith("Z")
    except (FileNotFoundError, ProcessLookupError):
        return False


def group_members(pgid: int) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and not fields[0].startswith("Z"):
                    found.append(int(d.name))
    return found


@dataclass
class RealServer:
    """One real SGLang server in `root` (its working directory), logging to root/server.log."""

    root: Path
    port: int
    flags: list[str]
    log_name: str = "server.log"
    pgids: set[int] = field(default_factory=set)
    pid: int = 0

    @property
    def log(self) -> Path:
        return self.root / self.log_name

    def start(self) -> int:
        serve = kit_dir() / "serve.sh"
        out = subprocess.run(
            ["sh", "-c", 'cd "$1" && log=$2 && shift 2 && setsid nohup "$@" > "$log" 2>&1 < /dev/null & echo $!',
             "sh", str(self.root), self.log_name, "bash", str(serve), "--port", str(self.port), *self.flags],
            capture_output=True, text=True, check=True, env=server_env())
        self.pid = int(out.stdout.strip())
        self.pgids.add(self.pid)
        return self.pid

    def wait_healthy(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if get(self.port, "/health", timeout=3)[0] == 200:
                return
            if self.pid and not alive(self.pid) and not self.server_pids():
                raise RuntimeError(f"real SGLang exited during start-up:\n{self.tail()}")
            time.sleep(0.5)
        raise TimeoutError(f"real SGLang on port {self.port} not healthy within {timeout} s:\n{self.tail()}")

    def wait_exit(self, timeout: float = 180) -> str:
        """Wait until the launched server is gone (a start-up failure); the log's text."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not alive(self.pid) and not any(group_members(g) for g in self.pgids):
                return self.log.read_text(errors="replace")
            time.sleep(0.3)
        raise TimeoutError(f"real SGLang on port {self.port} still running after {timeout} s:\n{self.tail()}")

    def wait_log(self, needle: str, timeout: float = 180) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if needle in text:
                return text
            time.sleep(0.3)
        raise TimeoutError(f"{needle!r} not in the log within {timeout} s:\n{self.tail()}")

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def server_pids(self) -> list[int]:
        """Live processes whose working directory is this server's root (the server, its children, and
        whatever relaunch started there)."""
        found = []
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(d / "cwd") == str(self.root) and alive(int(d.name)):
                        found.append(int(d.name))
        return found

    def main_pids(self) -> list[int]:
        """The launcher processes (`python -m sglang.launch_server`) running in root."""
        out = []
        for pid in self.server_pids():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"sglang.launch_server" in argv:
                    out.append(pid)
        return out

    def stop(self) -> None:
        groups = set(self.pgids)
        for pid in self.server_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                groups.add(os.getpgid(pid))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pgid in groups:
                if pgid > 1 and pgid != os.getpgrp():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pgid, sig)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(group_members(g) for g in groups if g > 1):
                time.sleep(0.2)


def free_port() -> int:
    from spectui.commands.demo.simrun import free_port as _free

    return _free()


def start_real(root: Path, flags: list[str], *, log: str = "server.log") -> RealServer:
    """A kit server started in `root` (made if missing) on a free port; not yet healthy."""
    root.mkdir(parents=True, exist_ok=True)
    server = RealServer(root, free_port(), list(flags), log_name=log)
    server.start()
    return server
