"""A relaunch's environment reaches the new server without appearing on any command line.

A real relaunch of the simulator whose environment holds planted secrets (and one more set with
--set-env), while a thread reads /proc/*/cmdline of every process on the machine as fast as it can, as an
unprivileged user polling /proc would: no planted value is ever seen, the new server has them all in its
environment, the private file that carried them is gone, and the plan's host commands carry no value."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from spectui.commands.demo.simrun import free_port
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.ops.relaunch.run import RelaunchOptions, execute
from spectui.sources.discover import discover
from spectui.sources.local import LocalHost

SECRETS = {"HF_TOKEN": "hf_PlantedTokenValue0123456789", "AWS_SECRET_ACCESS_KEY": "PlantedAwsSecret/abcdefXYZ987",
           "MY_DB_URL": "postgres://admin:PlantedDbPassword@db.internal:5432/prod"}
SET_SECRET = "sk-PlantedByTheEditItself42"
FAST = RelaunchOptions(stop_grace_s=10, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5, health_timeout_s=60)
FLAGS = ["--model-path", "/models/m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d",
         "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--speculative-num-steps", "3"]


class CmdlinePoller(threading.Thread):
    """Reads /proc/*/cmdline of every process until stopped; remembers every planted value it saw."""

    def __init__(self, needles: list[str]) -> None:
        super().__init__(daemon=True)
        self.needles = [n.encode() for n in needles]
        self.seen: dict[str, bytes] = {}
        self.passes = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                for n in self.needles:
                    if n in data:
                        self.seen[n.decode()] = data
            self.passes += 1


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
            return resp.status == 200
    except Exception:
        return False


async def test_relaunch_env_never_on_a_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))  # where the start keeps the environment file (host.run inherits it)
    root = tmp_path / "run"
    root.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    env.update(SECRETS, SPECTUI_SIM_TIME_SCALE="40", SPECTUI_SIM_TRAFFIC="2")
    out = subprocess.run(
        ["sh", "-c", 'cd "$1" && shift && setsid nohup "$@" > server.log 2>&1 < /dev/null & echo $!', "sh",
         str(root), sys.executable, "-m", "spectui.sim", *FLAGS, "--port", str(port)],
        capture_output=True, text=True, check=True, env=env)
    pid = int(out.stdout.strip())
    poller = CmdlinePoller([*SECRETS.values(), SET_SECRET, "PlantedDbPassword"])
    try:
        deadline = time.monotonic() + 30
        while not _healthy(port):
            assert time.monotonic() < deadline, (root / "server.log").read_text()[-800:]
            time.sleep(0.05)
        server = next(s for s in await discover(LocalHost()) if s.pid == pid)
        plan = build_plan(server, Edits.from_cli(env_sets=[f"OPENAI_API_KEY={SET_SECRET}"]), host_name="local",
                          now=datetime.now())
        shown = "\n".join(plan.to_json()["host_commands"]) + plan.render()
        for value in [*SECRETS.values(), SET_SECRET, "PlantedDbPassword"]:
            assert value not in shown
        assert not any(name in shown for name in SECRETS)  # host_commands carry no environment at all
        poller.start()
        result = await execute(LocalHost(), plan, FAST, history=HistoryStore(tmp_path / "h.jsonl"))
        poller.halt.set()
        poller.join(5)
        assert result.new.healthy, result.message
        new = result.new.pid
        assert poller.passes > 10  # it really watched, all through the start
        assert poller.seen == {}, poller.seen
        got = dict(e.split("=", 1) for e in Path(f"/proc/{new}/environ").read_bytes().decode().split("\0") if e)
        assert {k: got.get(k) for k in SECRETS} == SECRETS and got["OPENAI_API_KEY"] == SET_SECRET
        assert {k: v for k, v in got.items() if k != "OPENAI_API_KEY"} == server.env  # exactly, nothing added
        assert list(private.iterdir()) == []  # the 0600 file that carried it was removed after the start
    finally:
        poller.halt.set()
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError):
                if proc.name.isdigit() and os.readlink(proc / "cwd") == str(root):
                    os.killpg(os.getpgid(int(proc.name)), signal.SIGKILL)
