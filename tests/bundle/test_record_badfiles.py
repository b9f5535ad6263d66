"""Every reader of `spectui record`'s bundles (connect FILE, check FILE, report FILE) turns a bundle cut short,
one of an unknown (newer) format version and a plain tar that is not a bundle into one line, exit 2."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from spectui.bundle import BundleParts, write_bundle


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    good = root / "good.spectui.tar.gz"
    log = "".join(f"[2025-06-01 10:00:{i % 60:02d}] Decode batch, #running-req: 1, accept len: 1.8, "
                  f"gen throughput (token/s): 60.0, #queue-req: 0 filler {i * 'x'}\n" for i in range(400))
    write_bundle(good, BundleParts(target="local", log=log, launch={"command": "python -m sglang.launch_server "
                                                                     "--model-path /m", "env": {}}))
    cut = root / "cut.spectui.tar.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    newer = root / "newer.spectui.tar.gz"
    manifest = {"format": "spectui-bundle", "format_version": 99, "members": []}
    newer.write_bytes(gzip.compress(_tar({"manifest.json": json.dumps(manifest).encode()})))
    plain = root / "plain.tar"
    plain.write_bytes(_tar({"notes.txt": b"hello\n", "data.json": b"{}"}))
    return {"cut short": cut, "format": newer, "not a spectui bundle": plain}


@pytest.mark.parametrize("command", ["connect", "check", "report"])
@pytest.mark.parametrize("kind", ["cut short", "format", "not a spectui bundle"])
def test_bad_bundle_is_one_line_exit_2(bad_files, command, kind) -> None:
    out = subprocess.run([sys.executable, "-m", "spectui", command, str(bad_files[kind])], capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith(f"spectui {command}: ")
    assert kind in lines[0] or (kind == "format" and "newer spectui (format 99)" in lines[0])


# ---- #24: garbage in, one line out (exit 2), before anything runs ------------------------------------------

NGINX = ('192.168.1.10 - - [01/Dec/2026:10:00:01 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "Mozilla/5.0"\n'
         '2026/12/01 10:00:04 [error] 1234#1234: *1 open() "/usr/share/nginx/html/x" failed (2: No such file)\n') * 20


@pytest.fixture(scope="module")
def garbage(tmp_path_factory) -> dict[str, Path]:
    import random

    root = tmp_path_factory.mktemp("garbage")
    noise = random.Random(24).randbytes(20000)
    out = {"garbage.tar.gz": root / "garbage.tar.gz", "bin.log": root / "bin.log", "nginx.log": root / "nginx.log"}
    out["garbage.tar.gz"].write_bytes(noise)  # random bytes, named like a bundle
    out["bin.log"].write_bytes(noise)
    out["nginx.log"].write_text(NGINX, encoding="utf-8")
    return out


REASON = {"garbage.tar.gz": "is not a spectui bundle", "bin.log": "does not look like a text log (binary data",
          "nginx.log": "no SGLang line found in its 40 lines"}


@pytest.mark.parametrize("command", ["connect", "check", "report", "record"])
@pytest.mark.parametrize("name", sorted(REASON))
def test_garbage_is_one_line_exit_2(garbage, tmp_path, command, name) -> None:
    extra = ["-o", str(tmp_path / "out.spectui.tar.gz")] if command == "record" else []
    out = subprocess.run([sys.executable, "-m", "spectui", command, str(garbage[name]), *extra],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"spectui {command}: "), out.stderr
    # check and record take logs, not bundles: random bytes there are binary data whatever the name
    reason = REASON[name] if not (command in ("check", "record") and name == "garbage.tar.gz") else "binary data"
    assert reason in lines[0], lines[0]
    assert out.stdout == "" and not (tmp_path / "out.spectui.tar.gz").exists()  # nothing recorded, no cockpit


def test_a_local_server_log_is_only_refused_when_binary(garbage) -> None:
    """`local:/path` follows a live server's log, which may not hold an SGLang line yet: only binary data is
    refused there (the cockpit would show bytes)."""
    out = subprocess.run([sys.executable, "-m", "spectui", "connect", f"local:{garbage['bin.log']}"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "binary data" in out.stderr
    from spectui.commands.check.sniff import log_file_problem

    assert log_file_problem(str(garbage["nginx.log"]), text_too=False) is None
    assert "no SGLang line" in (log_file_problem(str(garbage["nginx.log"])) or "")


def test_report_keeps_this_servers_bench_only(tmp_path) -> None:
    """history.jsonl holds two launches on this host with a bench each: the one that wrote this log, and
    another server's (written last, so a host-wide read picks it). The report shows this log's bench only."""
    import os

    log = tmp_path / "server.log"
    log.write_text("[2025-06-01 10:00:01] Decode batch, #running-req: 1, accept len: 1.80, "
                   "gen throughput (token/s): 60.00, #queue-req: 0\n", encoding="utf-8")
    state = tmp_path / "state"
    (state / "spectui").mkdir(parents=True)
    rows = [
        {"id": "mine", "time": "2026-12-01T10:00:00+00:00", "host": "local", "new_pid": 4242001, "command": "x",
         "log": str(log), "outcome": "healthy"},
        {"id": "other", "time": "2026-12-01T11:00:00+00:00", "host": "local", "new_pid": 4242002, "command": "y",
         "log": str(tmp_path / "other.log"), "outcome": "healthy"},
        {"id": "mine", "bench": {"output_tokens_per_s": 111.5, "history_id": "b1"}},
        {"id": "other", "bench": {"output_tokens_per_s": 999.5, "history_id": "b2"}},
    ]
    (state / "spectui" / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "spectui", "report", str(log), "--duration", "0"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, "XDG_STATE_HOME": str(state)})
    assert out.returncode == 0, out.stderr
    assert "- bench: 111.5 output tok/s" in out.stdout
    assert "999.5" not in out.stdout


@pytest.mark.parametrize("name", ["bin.log", "garbage.tar.gz"])
def test_watch_refuses_a_binary_file(garbage, name) -> None:
    out = subprocess.run([sys.executable, "-m", "spectui", "watch", str(garbage[name]), "--duration", "5"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"spectui watch: {garbage[name]} does not look like a text log "
                                               "(binary data, no SGLang lines found); give the server's log file"]


def test_history_keeps_the_bench_of_this_servers_pid(tmp_path) -> None:
    """With a server found, the bench kept is the one of the (latest) launch that started its pid."""
    from spectui.ops.recorder import history_of
    from spectui.sources.base import ServerProcess

    path = tmp_path / "history.jsonl"
    rows = [
        {"id": "old", "time": "2026-12-01T09:00:00+00:00", "host": "gpu1", "new_pid": 77, "command": "x"},
        {"id": "mine", "time": "2026-12-01T10:00:00+00:00", "host": "gpu1", "new_pid": 77, "command": "x"},
        {"id": "other", "time": "2026-12-01T11:00:00+00:00", "host": "gpu1", "new_pid": 88, "command": "y"},
        {"id": "elsewhere", "time": "2026-12-01T12:00:00+00:00", "host": "gpu2", "new_pid": 77, "command": "z"},
        {"id": "old", "bench": {"output_tokens_per_s": 1.0}}, {"id": "mine", "bench": {"output_tokens_per_s": 2.0}},
        {"id": "other", "bench": {"output_tokens_per_s": 3.0}}, {"id": "elsewhere", "bench": {"output_tokens_per_s": 4.0}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    server = ServerProcess(pid=77, pgid=77, argv=("python",), env={}, cwd="/", log_path="/l", port=30000,
                           host_addr="127.0.0.1")
    assert history_of("gpu1", server, "/l", str(path))["bench"] == [{"output_tokens_per_s": 2.0}]
    assert history_of("gpu1", None, "/nowhere.log", str(path))["bench"] == []  # log only, no launch wrote it
