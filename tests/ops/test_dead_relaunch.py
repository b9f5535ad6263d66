"""`spectui relaunch` on a server that is gone (#24): `local:LOG`, `--pid` of a gone server and plain `local`
(the host's last server in the history) start it again from its last known launch, with the plan saying
where the command and its environment come from; a log with only a launch line or a server_args= line
is read too (the environment then said to be unknown). Real simulator on the local host, real CLI."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab, alive, proc_argv, wait_health

from spectui.cli import main


def _kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _relaunch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["relaunch", *argv, "--json", "--health-timeout", "60"])
    out, err = capsys.readouterr()
    return code, json.loads(out.strip().splitlines()[-1]) if out.strip() else {}, err


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    return dict(e.split("=", 1) for e in raw if "=" in e)


def test_a_killed_server_starts_again_from_its_log_its_pid_or_the_host(lab: SimLab, capsys: pytest.CaptureFixture[str]) -> None:
    first = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    argv = proc_argv(first)
    code, out, err = _relaunch(capsys, "local", "--pid", str(first), "--yes")  # a live relaunch: recorded
    assert code == 0, err
    second, log = out["new_pid"], out["log"]
    _kill(second)  # kill -9: no shutdown line, nothing runs now

    code, out, err = _relaunch(capsys, f"local:{log}", "--dry-run")
    assert code == 0, err
    assert out["from_known"] is True and out["old_pid"] == second
    assert "launch history" in out["known_note"] and "SGLANG_/CUDA_" in out["known_note"]

    code, out, err = _relaunch(capsys, f"local:{log}", "--yes")
    assert code == 0 and out["healthy"] is True, err
    third = out["new_pid"]
    assert proc_argv(third) == argv
    assert _environ(third)["SPECTUI_SIM_TIME_SCALE"] == "40"  # the recorded launch variables came along
    assert os.readlink(f"/proc/{third}/cwd") == str(lab.root)

    _kill(third)
    code, out, err = _relaunch(capsys, "local", "--pid", str(third), "--yes")
    assert code == 0 and out["healthy"] is True and out["from_known"] is True, err
    _kill(out["new_pid"])
    # nothing listens on its port now: the host's last server in the history (other servers of the machine,
    # other tests' or a colleague's, are not it)
    code, out, err = _relaunch(capsys, "local", "--server-port", str(lab.port), "--yes")
    assert code == 0 and out["healthy"] is True and out["from_known"] is True, err
    assert proc_argv(out["new_pid"]) == argv


def test_a_log_without_history_gives_its_launch_line_or_its_server_args(lab: SimLab, capsys: pytest.CaptureFixture[str]) -> None:
    log = lab.root / "old.log"
    log.write_text("# launch: CUDA_VISIBLE_DEVICES=3 python -m sglang.launch_server --model-path /m/q --port 31999 "
                   "--speculative-algorithm EAGLE3 --speculative-num-steps 3\n[2026-01-01 00:00:00] server up\n")
    code, out, err = _relaunch(capsys, f"local:{log}", "--dry-run")
    assert code == 0, err
    assert out["from_known"] and out["command"].endswith("--speculative-algorithm EAGLE3 --speculative-num-steps 3")
    assert "environment not known" in out["known_note"] and "CUDA_VISIBLE_DEVICES" in out["known_note"]
    assert not any("CUDA_VISIBLE_DEVICES" in c for c in out["host_commands"])  # env goes on stdin (#26)

    log.write_text("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m/q', tokenizer_path='/m/q', "
                   "host='0.0.0.0', port=31998, tp_size=2, speculative_algorithm='EAGLE3', "
                   "speculative_num_steps=3, trust_remote_code=True, dp_size=1)\n")
    code, out, err = _relaunch(capsys, f"local:{log}", "--dry-run")
    assert code == 0, err
    assert out["command"] == ("python3 -m sglang.launch_server --model-path /m/q --host 0.0.0.0 --port 31998 "
                              "--tp-size 2 --trust-remote-code --speculative-algorithm EAGLE3 --speculative-num-steps 3")
    assert "server_args=" in out["known_note"] and "environment not known" in out["known_note"]

    log.write_text("nothing to go on\n")
    assert main(["relaunch", f"local:{log}", "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert f"no SGLang server writes {log} on local, and nothing is known of the server that wrote" in err


@pytest.mark.sshd
def test_over_ssh_a_killed_server_starts_again_from_the_history(lab: SimLab, sshd, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    ssh = [sshd.target, "--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]
    first = lab.start(SEED_FLAGS, env=SIM_FAST_ENV)
    wait_health(lab.port)
    argv = proc_argv(first)
    code, out, err = _relaunch(capsys, *ssh, "--pid", str(first), "--yes")
    assert code == 0, err
    second = out["new_pid"]
    _kill(second)  # kill -9 on the host: today "no process N on HOST"
    code, out, err = _relaunch(capsys, *ssh, "--pid", str(second), "--yes")
    assert code == 0 and out["healthy"] is True and out["from_known"] is True, err
    assert "launch history" in out["known_note"]
    assert proc_argv(out["new_pid"]) == argv and os.readlink(f"/proc/{out['new_pid']}/cwd") == str(lab.root)
    assert _environ(out["new_pid"])["SPECTUI_SIM_TIME_SCALE"] == "40"
