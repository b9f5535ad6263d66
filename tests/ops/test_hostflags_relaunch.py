"""End to end: a server whose release spectui does not ship (0.5.99) is judged with ITS host's own SGLang
flags — the dump run with the server's interpreter and PYTHONPATH (from /proc), locally and over the
loopback sshd — and a failed dump falls back to the nearest bundled catalogue with a note, never a crash."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hostflags_stub import FUTURE_FLAG, fake_sglang, free_port, spectui, stub_server  # noqa: E402


def _plan(res) -> dict:  # type: ignore[no-untyped-def]
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_relaunch_plan_uses_the_hosts_own_flags(tmp_path: Path) -> None:
    site, port, cache = fake_sglang(tmp_path), free_port(), tmp_path / "cache"
    chain = ("--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
             "--speculative-num-draft-tokens", "4")
    with stub_server(site, port, tmp_path / "server.log", *chain) as proc:
        res = spectui("relaunch", "local", "--pid", str(proc.pid), "--set", f"{FUTURE_FLAG[2:]}=3",
                      "--set", "speculative-num-steps=4", "--set", "speculative-num-draft-tokens=5", "--dry-run",
                      "--json", cache=cache)  # a chain of 5: nothing for SGLang to override (#23)
        doc = _plan(res)
        assert doc["catalogue"]["source"] == "host" and doc["catalogue"]["exact"]
        assert doc["catalogue"]["version"] == "0.5.99" and sys.executable in doc["catalogue"]["why"]
        assert doc["verdict"] == "ok", doc["verdict_detail"]  # a flag only 0.5.99 has is accepted
        assert "read from local's own SGLang 0.5.99" in doc["version_note"]
        human = spectui("relaunch", "local", "--pid", str(proc.pid), "--set", f"{FUTURE_FLAG[2:]}=3", "--dry-run",
                        cache=cache)
        assert "verdict  ok  [SGLang 0.5.99: the server reports 0.5.99; read from local's own SGLang 0.5.99" \
            in human.stdout, human.stdout + human.stderr
        dumps = list((cache / "spectui" / "flags" / "local").glob("sglang-*.json"))
        assert [p.name for p in dumps] == ["sglang-0.5.99.json"]
        # An unknown flag is still refused by the host's own argparse.
        bad = _plan(spectui("relaunch", "local", "--pid", str(proc.pid), "--set", "speculative-nope=1",
                            "--dry-run", "--json", cache=cache))
    assert bad["verdict"] == "argparse_error" and bad["catalogue"]["source"] == "host"
    assert "unrecognized arguments: --speculative-nope" in bad["verdict_detail"]


def test_a_failed_dump_falls_back_to_the_nearest_bundled_with_a_note(tmp_path: Path) -> None:
    site, port = fake_sglang(tmp_path, with_server_args=False), free_port()  # no sglang.srt importable
    with stub_server(site, port, tmp_path / "server.log") as proc:
        doc = _plan(spectui("relaunch", "local", "--pid", str(proc.pid), "--set", "max-running-requests=8",
                            "--dry-run", "--json", cache=tmp_path / "cache"))
        future = _plan(spectui("relaunch", "local", "--pid", str(proc.pid), "--set", f"{FUTURE_FLAG[2:]}=3",
                               "--dry-run", "--json", cache=tmp_path / "cache"))
    pick = doc["catalogue"]
    assert pick["source"] == "bundled" and not pick["exact"] and pick["version"] == "0.5.23"
    assert "reading local's own flags failed" in pick["why"] and "No module named 'sglang.srt" in pick["why"]
    assert "reading local's own flags failed" in doc["version_note"]
    assert doc["verdict"] == "ok"
    assert future["verdict"] == "argparse_error"  # the bundled catalogue does not know 0.5.99's flag


def test_flags_host_judges_a_pasted_command_with_that_hosts_sglang(tmp_path: Path) -> None:
    site, cache = fake_sglang(tmp_path), tmp_path / "cache"
    cmd = [f"PYTHONPATH={site}", sys.executable, "-m", "sglang.launch_server", "--model-path", "/m", FUTURE_FLAG, "3"]
    res = spectui("flags", "--host", "local", "--sglang-version", "0.5.99", "--json", "--", *cmd, cache=cache)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["catalogue"]["source"] == "host" and doc["catalogue"]["version"] == "0.5.99"
    assert doc["outcome"] == "ok" and doc["requested"]["speculative_future_knob"] == 3
    human = spectui("flags", "--host", "local", "--sglang-version", "0.5.99", "--", *cmd, cache=cache)
    assert "flags judged with catalogue 0.5.99 (read from local's own SGLang 0.5.99" in human.stdout
    # Without --host the bundled nearest release judges it: the new flag is unknown there.
    plain = spectui("flags", "--sglang-version", "0.5.99", "--json", "--", *cmd, cache=cache)
    assert json.loads(plain.stdout)["outcome"] == "argparse_error"
    # No sglang for that Python: nearest bundled, with the reason; never a crash.
    gone = spectui("flags", "--host", "local", "--sglang-version", "0.5.98", "--json", "--", sys.executable, "-m",
                   "sglang.launch_server", "--model-path", "/m", cache=cache)
    doc = json.loads(gone.stdout)
    assert gone.returncode == 0 and doc["catalogue"]["source"] == "bundled"
    assert "reading local's own flags failed" in doc["catalogue"]["why"]


@pytest.mark.sshd
def test_relaunch_plan_over_ssh_reads_the_remote_hosts_flags(sshd, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    site, port, cache = fake_sglang(tmp_path), free_port(), tmp_path / "cache"
    ssh = ["--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]
    with stub_server(site, port, tmp_path / "server.log") as proc:
        doc = _plan(spectui("relaunch", sshd.target, "--pid", str(proc.pid), "--set", f"{FUTURE_FLAG[2:]}=3",
                            "--dry-run", "--json", *ssh, cache=cache))
    assert doc["catalogue"]["source"] == "host" and doc["verdict"] == "ok"
    assert f"read from {sshd.target}'s own SGLang 0.5.99" in doc["catalogue"]["why"]
    assert list((cache / "spectui" / "flags").iterdir())[0].name != "local"
