"""Hostile bundles, built here byte by byte: sparse members, gzip bombs, members larger than the format
allows, deeply nested and wrong-typed JSON. Each is refused with one line and exit 2 by `check`, `report`
and `connect`, before memory grows (the child's peak RSS is measured)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from trust_kit import END_OF_TAR, manifest_bytes, sparse_entry, tar_entry

from spectui.bundle import (
    BundleChecksumError,
    BundleCorruptError,
    BundleTooLargeError,
    NotABundleError,
    read_bundle,
)

GiB = 1 << 30
# Peak RSS of a spectui child (python, textual/rich imports) reading a small bundle is ~100 MB.
RSS_LIMIT_KB = 400 * 1024

_MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n' + r.stderr); "
            "sys.exit(r.returncode)")


def _spectui(*argv: str) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in KiB) of `python -m spectui ARGV`."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "spectui", *argv],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         env={**os.environ, "TERM": "dumb"})
    rss, _, stderr = out.stdout.partition("\n")
    return out.returncode, stderr, int(rss)


def _sparse_bomb(path: Path) -> Path:
    """The reviewer's bundle: a manifest listing six 1 GiB sparse members, well under a kilobyte gzipped."""
    names = [f"server_info/{i:04d}.json" for i in range(6)]
    tar = tar_entry("manifest.json", manifest_bytes([(n, GiB) for n in names]))
    tar += b"".join(sparse_entry(n, GiB) for n in names) + END_OF_TAR
    path.write_bytes(gzip.compress(tar, 9))
    return path


def _gzip_bomb(path: Path, *, listed_size: int | None) -> Path:
    """About 1 MB of gzip that inflates to 1 GiB of zeros in a member after a valid small manifest;
    `listed_size`: what the manifest says of the member (None: not listed)."""
    members = [] if listed_size is None else [("log.txt", listed_size)]
    head = tar_entry("manifest.json", manifest_bytes(members, log={"budget": 8 << 20}))
    head += tar_entry("log.txt" if listed_size is not None else "junk.bin", declared=GiB)[:512]
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    parts = [z.compress(head)]
    zeros = bytes(1 << 20)
    for _ in range(GiB >> 20):
        parts.append(z.compress(zeros))
    parts.append(z.compress(END_OF_TAR) + z.flush())
    path.write_bytes(b"".join(parts))
    return path


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bombs")
    return {"sparse": _sparse_bomb(d / "sparse.spectui.tar.gz"),
            "gzip-listed": _gzip_bomb(d / "listed.spectui.tar.gz", listed_size=GiB),
            "gzip-misdeclared": _gzip_bomb(d / "mis.spectui.tar.gz", listed_size=100),
            "gzip-unlisted": _gzip_bomb(d / "unlisted.spectui.tar.gz", listed_size=None)}


def test_the_bombs_are_what_they_claim(bombs: dict[str, Path]) -> None:
    assert bombs["sparse"].stat().st_size < 1000
    assert all(bombs[k].stat().st_size < 1_200_000 for k in ("gzip-listed", "gzip-unlisted"))
    with gzip.open(bombs["gzip-unlisted"]) as gz:  # it really inflates past 1 GiB
        total = 0
        while chunk := gz.read(1 << 24):
            total += len(chunk)
    assert total > GiB


@pytest.mark.parametrize(("kind", "error", "words"), [
    ("sparse", BundleTooLargeError, "declares 1,073,741,824 bytes"),
    ("gzip-listed", BundleTooLargeError, "member log.txt declares 1,073,741,824 bytes"),
    ("gzip-misdeclared", BundleChecksumError, "does not match its size"),
    ("gzip-unlisted", BundleTooLargeError, "more data than its manifest.json accounts for"),
])
def test_read_bundle_refuses_bombs_unread(bombs: dict[str, Path], kind: str, error: type, words: str) -> None:
    with pytest.raises(error) as caught:
        read_bundle(bombs[kind])
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_sparse_member_is_refused_even_when_its_size_is_listed_small(tmp_path: Path) -> None:
    tar = tar_entry("manifest.json", manifest_bytes([])) + sparse_entry("log.txt", GiB) + END_OF_TAR
    path = tmp_path / "s.tar.gz"
    path.write_bytes(gzip.compress(tar))
    with pytest.raises(BundleCorruptError, match="sparse file"):
        read_bundle(path)


@pytest.mark.parametrize("command", ["check", "report", "connect"])
@pytest.mark.parametrize("kind", ["sparse", "gzip-unlisted"])
def test_commands_refuse_bombs_in_one_line_without_growing(bombs: dict[str, Path], command: str, kind: str) -> None:
    code, stderr, rss_kb = _spectui(command, str(bombs[kind]))
    assert code == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    assert "refused unread" in stderr
    assert rss_kb < RSS_LIMIT_KB, f"peak RSS {rss_kb // 1024} MiB"


def _bundle(tmp_path: Path, members: dict[str, bytes], manifest: bytes | None = None) -> Path:
    import hashlib

    if manifest is None:
        obj = json.loads(manifest_bytes([]))
        obj["members"] = [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                          for n, d in members.items()]
        manifest = json.dumps(obj).encode()
    tar = tar_entry("manifest.json", manifest) + b"".join(tar_entry(n, d) for n, d in members.items())
    path = tmp_path / "b.spectui.tar.gz"
    path.write_bytes(gzip.compress(tar + END_OF_TAR))
    return path


DEEP = ("[" * 100_000 + "]" * 100_000).encode()
DEEPISH = ('{"a":' * 200 + "1" + "}" * 200).encode()  # under the recursion limit, over the depth limit


@pytest.mark.parametrize("manifest", [
    DEEP, DEEPISH,
    b'{"format_version": 1, "window": [1, 2]}',
    b'{"format_version": 1, "members": {"log.txt": 1}}',
    b'{"format_version": 1, "members": [{"name": "log.txt", "size": "12", "sha256": "x"}]}',
    b'{"format_version": true}',
    b'{"format_version": 1, "target": {"x": 1}}',
    b'{"format_version": 1, "window": {"start_t": "yesterday"}}',
    b'{"format_version": 1, "members": [{"name": "log.txt", "size": -5, "sha256": "x"}]}',
], ids=["deep", "deepish", "window-list", "members-dict", "size-str", "version-bool", "target-dict",
        "start-str", "size-negative"])
def test_a_hostile_manifest_is_not_a_bundle(tmp_path: Path, manifest: bytes) -> None:
    path = _bundle(tmp_path, {}, manifest)
    with pytest.raises(NotABundleError, match="manifest.json is not a spectui manifest"):
        read_bundle(path)
    code, stderr, _ = _spectui("report", str(path))
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr


ACCESSOR = {"launch.json": "launch", "config.json": "config", "server_info/0000.json": "server_info",
            "series.jsonl": "series", "diagnoses.json": "diagnoses"}


@pytest.mark.parametrize("member", list(ACCESSOR))
@pytest.mark.parametrize("body", [DEEP, DEEPISH], ids=["deep", "deepish"])
def test_a_deeply_nested_member_is_one_line(tmp_path: Path, member: str, body: bytes) -> None:
    path = _bundle(tmp_path, {"log.txt": b"", member: body})
    with pytest.raises(BundleCorruptError, match=f"member {member} is not valid JSON"):
        getattr(read_bundle(path), ACCESSOR[member])
    for command in ("report", "check"):  # each reads what it needs: a line and exit 2, never a traceback
        code, stderr, _ = _spectui(command, str(path))
        assert "Traceback" not in stderr and code in (0, 1, 2), stderr
        assert code != 2 or (len(stderr.strip().splitlines()) == 1 and "not valid JSON" in stderr), stderr
        if member in ("launch.json", "config.json", "diagnoses.json") and command == "report":
            assert code == 2, stderr
