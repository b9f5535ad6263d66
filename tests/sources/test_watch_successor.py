"""`spectui watch --jsonl` across a relaunch done elsewhere, on real simulators started the way an operator
starts them (`setsid nohup python -m spectui.sim … > log 2>&1 &`): `gone`, then a `server` event naming the
successor, then the new log's records; a successor appending to the same log keeps the follow; a log file
given as the target is never switched. And `watch … | head -n 3` ends quietly, locally and over SSH."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, alive, free_port, wait_health  # noqa: E402
from sshd_harness import Sshd  # noqa: E402
from test_liveness_watch import Watch, env  # noqa: E402

pytestmark = pytest.mark.timeout(90)

FLAGS = ["--model-path", "/models/llama"]


def stop(pid: int, timeout: float = 15) -> None:
    """SIGTERM the server's process group (SimLab starts it with setsid) and wait until it is gone."""
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"pid {pid} still alive"
        time.sleep(0.05)


def index(events: list[dict], predicate) -> int:
    return next(i for i, e in enumerate(events) if predicate(e))


def test_watch_follows_the_successor_on_the_same_port_into_its_new_log(tmp_path: Path) -> None:
    lab = SimLab(tmp_path, free_port())
    old = lab.start(FLAGS, "server.log", env=SIM_FAST_ENV)
    watch = None
    try:
        wait_health(lab.port)
        watch = Watch("local", "--pid", str(old), env=env())
        watch.wait(lambda: [e["state"] for e in watch.health()] == ["healthy"])
        stop(old)
        watch.wait(lambda: watch.health()[-1]["state"] == "gone")
        new = lab.start(FLAGS, "server-2.log", env=SIM_FAST_ENV)  # relaunched by hand: same port, new log
        new_log = str(tmp_path / "server-2.log")
        watch.wait(lambda: any(e["type"] == "server" for e in watch.events), timeout=20)
        succ_at = index(watch.events, lambda e: e["type"] == "server")
        watch.wait(lambda: any(e["type"] == "decode" for e in watch.events[succ_at:]), timeout=30)
        watch.wait(lambda: watch.health()[-1] == {"type": "health", "state": "healthy", "reason": "answers /health",
                                                  "pid": new}, timeout=30)
        evs = list(watch.events)
    finally:
        if watch is not None:
            watch.stop()
        lab.cleanup()
    gone = index(evs, lambda e: e["type"] == "health" and e["state"] == "gone")
    succ = index(evs, lambda e: e["type"] == "server")
    assert evs[gone]["pid"] == old and gone < succ
    assert evs[succ] == {"type": "server", "state": "successor", "pid": new, "log": new_log, "port": lab.port,
                         "previous_pid": old}
    # then the new log, from its first line: its own connection event, its records with its line numbers
    assert evs[succ + 1]["type"] == "connection" and evs[succ + 1]["state"] == "connected"
    assert new_log in evs[succ + 1]["detail"]
    lines = Path(new_log).read_text().splitlines()
    after = [e for e in evs[succ:] if e["type"] == "decode"]
    assert after and all("Decode batch" in lines[e["n"] - 1] for e in after)
    assert [e["type"] for e in evs].count("server") == 1
    assert all(e["pid"] == new for e in evs[succ:] if e["type"] == "health")


def test_a_successor_appending_to_the_same_log_keeps_the_follow(tmp_path: Path) -> None:
    lab = SimLab(tmp_path, free_port())
    old = lab.start(FLAGS, "server.log", env=SIM_FAST_ENV)
    log = tmp_path / "server.log"
    watch = None
    try:
        wait_health(lab.port)
        watch = Watch("local", "--pid", str(old), "--raw", env=env())
        watch.wait(lambda: [e["state"] for e in watch.health()] == ["healthy"])
        stop(old)
        watch.wait(lambda: watch.health()[-1]["state"] == "gone")
        seen = len(log.read_text().splitlines())
        out = subprocess.run(  # `>> server.log`: the operator's relaunch appends to the same file
            ["sh", "-c", 'cd "$1" && shift && setsid nohup "$@" >> server.log 2>&1 < /dev/null & echo $!', "sh",
             str(tmp_path), sys.executable, "-m", "spectui.sim", *FLAGS, "--port", str(lab.port)],
            capture_output=True, text=True, check=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}, **SIM_FAST_ENV})
        new = int(out.stdout.strip())
        lab.pgids.add(new)
        watch.wait(lambda: watch.health()[-1]["pid"] == new and watch.health()[-1]["state"] == "healthy", timeout=30)
        watch.wait(lambda: any(e["type"] == "line" and e["n"] > seen + 5 for e in watch.events), timeout=20)
        evs = list(watch.events)
    finally:
        if watch is not None:
            watch.stop()
        lab.cleanup()
    succ = index(evs, lambda e: e["type"] == "server")
    assert evs[succ]["pid"] == new and evs[succ]["previous_pid"] == old and evs[succ]["log"] == str(log)
    assert [e["type"] for e in evs].count("connection") == 1  # never re-opened
    ns = [e["n"] for e in evs if e["type"] == "line"]
    assert ns == list(range(ns[0], ns[0] + len(ns)))  # every line once, numbering goes on


def test_a_log_file_target_is_not_switched_to_a_successor(tmp_path: Path) -> None:
    lab = SimLab(tmp_path, free_port())
    old = lab.start(FLAGS, "server.log", env=SIM_FAST_ENV)
    watch = None
    try:
        wait_health(lab.port)
        watch = Watch(str(tmp_path / "server.log"), env=env())
        watch.wait(lambda: any(e["type"] == "decode" for e in watch.events))
        stop(old)
        lab.start(FLAGS, "server-2.log", env=SIM_FAST_ENV)
        wait_health(lab.port)
        time.sleep(3)  # several successor rounds' worth
        evs = list(watch.events)
    finally:
        if watch is not None:
            watch.stop()
        lab.cleanup()
    assert not [e for e in evs if e["type"] in ("health", "server")]
    assert all("server-2.log" not in str(e.get("detail")) for e in evs)


def _head(argv: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = shlex.join([sys.executable, "-m", "spectui", "watch", *argv]) + " | head -n 3"
    # bash: the exit status of watch itself (PIPESTATUS), and its stderr, which must stay empty
    script = f"{cmd} > /dev/null; echo ${{PIPESTATUS[0]}}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, env=env())


def test_watch_piped_into_head_exits_cleanly(tmp_path: Path, sshd: Sshd) -> None:
    lab = SimLab(tmp_path, free_port())
    pid = lab.start(FLAGS, "server.log", env=SIM_FAST_ENV)
    ssh = ["--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]
    try:
        wait_health(lab.port)
        runs = [_head(["local", "--pid", str(pid), "--jsonl"]), _head(["local", "--pid", str(pid), "--raw"])]
        # over SSH the tail's SFTP handle is closed on the way out: it was left pending ("Task was destroyed")
        runs += [_head([sshd.target, "--pid", str(pid), "--jsonl", *ssh]) for _ in range(2)]
    finally:
        lab.cleanup()
    for res in runs:
        assert res.stdout.strip() == "0" and res.stderr == "", res.stderr[-2000:]


def test_human_form_of_the_successor_event() -> None:
    from spectui.commands.watch.loop import human

    text = human({"type": "server", "state": "successor", "pid": 12, "log": "/l/s-2.log\x1b[31m", "port": 30000,
                  "previous_pid": 11})
    assert text is not None and "\x1b" not in text  # a path is data: no escape reaches the terminal
    assert text.startswith("server  successor pid 12 (was pid 11), log /l/s-2.log")
