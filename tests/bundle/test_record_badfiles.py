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
