"""One way to name a server everywhere (#24): on a host running two simulated SGLang servers, every command
that acts on one server takes --pid and --server-port and picks the same one; without either it lists them
(pid, port, model, algorithm) and exits; a subcommand's usage error shows that subcommand's usage. Real
simulators on the local host, the real CLI (in-process)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from spectui.cli import main
from spectui.commands.demo.simrun import free_port

A = ["--model-path", "/m/alpha", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/m/d",
     "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
B = ["--model-path", "/m/beta"]


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    env["SPECTUI_SIM_TIME_SCALE"] = "40"
    procs = []
    for name, flags in (("a", A), ("b", B)):
        port = free_port()
        with open(tmp_path / f"{name}.log", "wb") as log:
            procs.append((subprocess.Popen([sys.executable, "-m", "spectui.sim", *flags, "--port", str(port)],
                                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True, env=env), port))
    try:
        deadline = time.monotonic() + 60
        while not all(_healthy(port) for _, port in procs):
            assert time.monotonic() < deadline, "simulators not healthy"
            time.sleep(0.1)
        yield [(p.pid, port) for p, port in procs]
    finally:
        for p, _ in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_command_lists_several_servers_and_takes_pid_or_server_port(two, tmp_path, capsys) -> None:
    (pa, port_a), (pb, port_b) = two
    for argv in (["watch", "local", "--duration", "20"], ["relaunch", "local", "--dry-run"],
                 ["inspect", "local", "--json"], ["record", "local", "-o", str(tmp_path / "x.tar.gz")],
                 ["report", "local", "--duration", "0.5"]):
        code, _, err = _run(capsys, *argv)
        assert code != 0, argv
        # (other servers of the machine may be listed too)
        assert re.search(r"\d+ SGLang servers on local; pick one with --pid PID or --server-port PORT", err), (argv, err)
        assert f"pid {pa}" in err and f"port {port_a}" in err and "model /m/alpha  algorithm EAGLE3" in err, err
        assert f"pid {pb}" in err and "model /m/beta  algorithm none" in err, err

    code, out, err = _run(capsys, "relaunch", "local", "--server-port", str(port_b), "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["old_pid"] == pb
    code, out, err = _run(capsys, "watch", "local", "--server-port", str(port_a), "--duration", "1.5", "--jsonl")
    assert code in (0, 1), err
    assert "pick one" not in err
    code, out, err = _run(capsys, "record", "local", "--server-port", str(port_b), "--duration", "0.5",
                          "-o", str(tmp_path / "b.spectui.tar.gz"))
    assert code == 0, err
    assert (tmp_path / "b.spectui.tar.gz").stat().st_size > 0
    code, out, err = _run(capsys, "report", "local", "--pid", str(pa), "--duration", "0.5", "--format", "json")
    assert code == 0, err
    assert "/m/alpha" in out and "/m/beta" not in out
    code, out, err = _run(capsys, "report", "local", "--server-port", str(port_b), "--duration", "0.5",
                          "--format", "json")
    assert code == 0, err
    assert "/m/beta" in out and "/m/alpha" not in out
    code, out, err = _run(capsys, "inspect", "local", "--server-port", str(port_a), "--json")
    assert "pick one" not in err and "/m/d" in out + err
    code, out, err = _run(capsys, "advise", "local", "--server-port", str(port_b))
    assert "pick one" not in err
    code, _, err = _run(capsys, "relaunch", "local", "--server-port", "1", "--dry-run")
    assert code != 0 and "no SGLang server listens on port 1 on local" in err


@pytest.mark.parametrize("command", ["watch", "relaunch", "inspect", "advise", "record", "report"])
def test_a_usage_error_shows_the_subcommands_usage(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, "local", "--no-such-option", *(["-o", "x.tar.gz"] if command == "record" else [])])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: spectui {command} ")
    assert f"spectui {command}: error: unrecognized arguments: --no-such-option" in err
    assert "--server-port" in err and "--pid" in err
