"""A bad bundle is one typed, one-line InputError (exit code 2) saying what to do."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from bundle_leaky import leaky_parts

from spectui.bundle import (
    BundleChecksumError,
    BundleError,
    BundleTruncatedError,
    BundleVersionError,
    NotABundleError,
    read_bundle,
    write_bundle,
)
from spectui.errors import InputError


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text and "\r" not in text
    assert isinstance(exc, InputError) and isinstance(exc, BundleError) and exc.exit_code == 2
    return text


def _tar_gz(path: Path, members: dict[str, bytes], *, gz: bool = True) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue()) if gz else buf.getvalue())


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.tar.gz"
    parts = leaky_parts(log=os.urandom(200_000).hex().encode())  # big enough to cut anywhere
    write_bundle(path, parts)
    return path


@pytest.mark.parametrize("keep", [0.02, 0.5, 0.97, -4])
def test_truncated_bundle(good: Path, tmp_path: Path, keep: float) -> None:
    data = good.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: int(len(data) * keep)] if keep > 0 else data[: int(keep)])
    with pytest.raises(BundleTruncatedError) as err:
        read_bundle(cut)
    assert "cut short" in _one_line(err.value) and "cut.tar.gz" in str(err.value)


def test_empty_file_is_cut_short(tmp_path: Path) -> None:
    (tmp_path / "e.tar.gz").write_bytes(b"")
    with pytest.raises(BundleTruncatedError) as err:
        read_bundle(tmp_path / "e.tar.gz")
    _one_line(err.value)


def test_newer_format_version(tmp_path: Path) -> None:
    path = tmp_path / "new.tar.gz"
    _tar_gz(path, {"manifest.json": json.dumps({"format_version": 7, "members": []}).encode()})
    with pytest.raises(BundleVersionError) as err:
        read_bundle(path)
    text = _one_line(err.value)
    assert "made by a newer spectui (format 7); this spectui reads up to 1 — upgrade" in text


@pytest.mark.parametrize("gz", [True, False])
def test_tar_without_manifest_is_not_a_bundle(tmp_path: Path, gz: bool) -> None:
    path = tmp_path / "plain.tar"
    _tar_gz(path, {"notes.txt": b"hello\n", "data/x.json": b"{}"}, gz=gz)
    with pytest.raises(NotABundleError) as err:
        read_bundle(path)
    assert "no manifest.json" in _one_line(err.value)


def test_random_file_and_bad_manifest_are_not_bundles(tmp_path: Path) -> None:
    (tmp_path / "r.bin").write_bytes(b"this is a log file, not an archive\n" * 40)
    with pytest.raises(NotABundleError) as err:
        read_bundle(tmp_path / "r.bin")
    _one_line(err.value)
    _tar_gz(tmp_path / "m.tar.gz", {"manifest.json": b"[1, 2"})
    with pytest.raises(NotABundleError) as err:
        read_bundle(tmp_path / "m.tar.gz")
    _one_line(err.value)


def test_member_sha_mismatch(good: Path, tmp_path: Path) -> None:
    with tarfile.open(good, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    members["config.json"] = members["config.json"].replace(b'"speculative_num_steps": 1', b'"speculative_num_steps": 9')
    bad = tmp_path / "edited.tar.gz"
    _tar_gz(bad, members)
    with pytest.raises(BundleChecksumError) as err:
        read_bundle(bad)
    text = _one_line(err.value)
    assert "config.json" in text and "sha256" in text and err.value.member == "config.json"


def test_member_listed_but_missing_is_cut_short(good: Path, tmp_path: Path) -> None:
    with tarfile.open(good, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    del members["history.json"]
    _tar_gz(tmp_path / "short.tar.gz", members)
    with pytest.raises(BundleTruncatedError) as err:
        read_bundle(tmp_path / "short.tar.gz")
    assert "history.json" in _one_line(err.value)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        read_bundle(tmp_path / "nope.tar.gz")
    assert "\n" not in str(err.value)
