"""`spectui watch` driven as a user runs it: a real process, real files, the simulator, a real sshd."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from procs import free_port, started, stub_sglang, wait_for_text
from sshd_harness import Sshd

from spectui.sim.scenarios import SCENARIOS

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
# Real SGLang log, source: https://github.com/sgl-project/sglang/pull/6081 (file header)
MTP_LOG = CORPUS / "003-mtp-dp-attention-accept-len.log"
ACCEPT = re.compile(r"accept len: ([0-9.]+)")


def spectui(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def ssh_opts(sshd: Sshd, known_hosts: Path | None = None) -> list[str]:
    return ["--ssh-config", "/dev/null", "-i", str(sshd.client_key),
            "--known-hosts", str(known_hosts or sshd.known_hosts)]


def test_watch_over_ssh_finds_the_simulator_and_prints_its_decode_lines(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    argv = [sys.executable, "-m", "spectui.sim",
            *SCENARIOS["healthy"].argv(host="127.0.0.1", port=free_port())]
    knobs = SCENARIOS["healthy"].env(time_scale=30, traffic=8)  # SPECTUI_SIM_* variables
    with started(argv, log, env=knobs) as sim:
        wait_for_text(log, "Decode batch")
        proc = subprocess.Popen([sys.executable, "-m", "spectui", "watch", sshd.target, "--pid", str(sim.pid),
                                 "--jsonl", "--duration", "120", *ssh_opts(sshd)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        evs: list[dict] = []
        try:  # read until a few decode events and a phase have come (the duration is only a ceiling)
            while sum(e["type"] == "decode" for e in evs) < 3 or not any(e["type"] == "phase" for e in evs):
                line = proc.stdout.readline()
                assert line, proc.stderr.read() if proc.stderr else ""
                evs.append(json.loads(line))
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
        # A whole run to its --duration end: nothing but events, nothing leaks onto the terminal. The SSH
        # connect and discovery alone take ~2.5 s on a busy 2-core machine (a shell start per remote
        # command): 3 s left the first decode line on the edge of the window.
        res = spectui("watch", sshd.target, "--pid", str(sim.pid), "--duration", "8", *ssh_opts(sshd))
    assert res.returncode == 0 and res.stderr == "", res.stderr[-2000:]
    assert "decode" in res.stdout
    assert evs[0]["type"] == "connection" and evs[0]["state"] == "connected" and str(log) in evs[0]["detail"]
    decodes = [e for e in evs if e["type"] == "decode"]
    assert decodes
    lines = log.read_text().splitlines()
    for ev in decodes:  # each event points at its own line, and carries that line's accept len
        line = lines[ev["n"] - 1]
        assert "Decode batch" in line
        assert ev["accept_len"] == float(ACCEPT.search(line).group(1))  # type: ignore[union-attr]
    assert any(e["type"] == "phase" for e in evs)


def test_raw_prints_every_line_once_while_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(MTP_LOG.read_bytes())
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "watch", str(log), "--raw", "--jsonl", "--from-start",
                             "--duration", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        first = json.loads(proc.stdout.readline())
        assert first["type"] == "connection"
        with open(log, "a") as f:
            for i in range(500):
                f.write(f"appended {i}\n")
                if i % 100 == 0:
                    f.flush()
                    time.sleep(0.05)
        want = log.read_text().splitlines()
        got: list[dict] = []
        while len(got) < len(want):  # read until every line has come (the duration is only a ceiling)
            ev = json.loads(proc.stdout.readline())
            if ev["type"] == "line":
                got.append(ev)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    got += [e for e in events(out) if e["type"] == "line"]  # anything after: there must be nothing
    assert [e["text"] for e in got] == want
    assert [e["n"] for e in got] == list(range(1, len(want) + 1))


def test_stdin_gives_the_same_decode_events_as_the_file() -> None:
    text = MTP_LOG.read_text()
    res = spectui("watch", "-", "--jsonl", stdin=text)
    assert res.returncode == 0, res.stderr
    decodes = [e for e in events(res.stdout) if e["type"] == "decode"]
    expected = [float(m.group(1)) for m in map(ACCEPT.search, text.splitlines()) if m]
    assert [d["accept_len"] for d in decodes] == expected


def test_human_output_strips_terminal_escapes(tmp_path: Path) -> None:
    log = tmp_path / "evil.log"
    log.write_text("plain\n\x1b]0;pwned\x07\x1b[31mred\n")
    res = spectui("watch", str(log), "--raw", "--from-start", "--duration", "1")
    assert res.returncode == 0
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "red" in res.stdout


def test_human_output_drops_c1_controls_and_bidi_overrides() -> None:
    from spectui.commands.watch.loop import human

    # 8-bit OSC (U+009D) sets the window title on some terminals; U+202E reverses the rest of the line.
    shown = human({"type": "line", "n": 1, "text": "a\x9d0;pwned\x07b \u202eevil"})
    assert shown is not None and "\x9d" not in shown and "\u202e" not in shown and "evil" in shown


def test_several_servers_are_listed_with_their_api_key_masked(tmp_path: Path) -> None:
    argv = [*stub_sglang(tmp_path), "--api-key", "sekrit-123"]
    env = {"PYTHONPATH": str(tmp_path / "stubpath")}
    with started(argv, tmp_path / "a.log", cwd=tmp_path, env=env), \
            started(argv, tmp_path / "b.log", cwd=tmp_path, env=env):
        wait_for_text(tmp_path / "a.log", "on stderr")
        wait_for_text(tmp_path / "b.log", "on stderr")
        res = spectui("watch", "local", "--duration", "1")
    assert res.returncode != 0 and "pick one with --pid" in res.stderr, res.stderr
    # listed as pid, port, model, algorithm (#24): the command line, and so its key, is not shown
    assert res.stderr.count("\n  pid ") >= 2 and "sekrit" not in res.stderr


def test_unknown_host_key_wrong_key_and_bad_target_are_one_line_errors(sshd: Sshd, tmp_path: Path) -> None:
    res = spectui("watch", sshd.target, *ssh_opts(sshd, tmp_path / "empty_known_hosts"))
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1
    assert "SHA256:" in res.stderr and "--accept-new-host-key" in res.stderr and "ssh-keyscan" in res.stderr
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    res = spectui("watch", sshd.target, "--ssh-config", "/dev/null", "-i", str(wrong),
                  "--known-hosts", str(sshd.known_hosts))
    assert res.returncode == 1 and "permission denied" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = spectui("watch", "a b")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_host_down_keeps_retrying_and_missing_log_says_so(tmp_path: Path) -> None:
    res = spectui("watch", f"127.0.0.1:{free_port()}", "--jsonl", "--duration", "2", "--ssh-config", "/dev/null")
    assert res.returncode == 0, res.stderr
    evs = events(res.stdout)
    assert evs and all(e["state"] == "reconnecting" and "refused" in e["detail"] for e in evs)
    res = spectui("watch", str(tmp_path / "nope.log"), "--jsonl", "--duration", "1.5")
    evs = events(res.stdout)
    assert res.returncode == 0 and len(evs) == 1 and "missing" in evs[0]["detail"]


def test_pid_that_is_not_sglang(tmp_path: Path) -> None:
    with started(["sleep", "60"], tmp_path / "x.log") as proc:
        res = spectui("watch", "local", "--pid", str(proc.pid))
    assert res.returncode == 1 and "not an SGLang server" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_watch_stdin_exits_1_on_an_error_diagnosis_and_0_without() -> None:
    # The seed's first incident (seeds/000): vLLM's flag name, rejected by SGLang's argparse.
    bad = ("python3 -m sglang.launch_server --num-speculative-tokens 16\nusage: launch_server.py [-h]\n"
           "launch_server.py: error: unrecognized arguments: --num-speculative-tokens 16\n")
    res = subprocess.run([sys.executable, "-m", "spectui", "watch", "-", "--jsonl"], input=bad,
                         capture_output=True, text=True, timeout=60)
    events = [json.loads(x) for x in res.stdout.splitlines()]
    assert any(e["type"] == "diagnosis" and e["severity"] == "error" for e in events)
    assert res.returncode == 1, res.stderr
    ok = "[2025-01-01 10:00:00] Decode batch. #running-req: 1, #token: 10, token usage: 0.01, accept len: 3.10\n"
    res = subprocess.run([sys.executable, "-m", "spectui", "watch", "-", "--jsonl"], input=ok,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
