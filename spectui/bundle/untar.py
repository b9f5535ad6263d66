"""The bundle's tar.gz read as a stream, within a budget that follows from the format (docs/BUNDLE.md
"Limits"): never inflated whole, so a gzip bomb, a sparse member or a member larger than the format
allows is refused before memory grows. `read_members(path)` gives the manifest's bytes and the members
it lists; read_bundle (reader.py) checks them."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import Path
from typing import Any

from spectui.bundle import manifest as mf
from spectui.bundle.errors import (
    BundleChecksumError,
    BundleCorruptError,
    BundleTooLargeError,
    BundleTruncatedError,
    NotABundleError,
    one_line,
)
from spectui.core import limits as lim
from spectui.errors import InputError


class _Budget(io.RawIOBase):
    """A read-only stream counting what it hands out; past `limit` bytes it raises BundleTooLargeError,
    so a gzip bomb or a member the manifest does not account for stops before memory grows."""

    def __init__(self, raw: Any, limit: int, shown: str) -> None:
        self.raw, self.limit, self.shown, self.total = raw, limit, shown, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.raw.readinto(b)
        self.total += n or 0
        if self.total > self.limit:
            raise BundleTooLargeError(
                f"bundle {self.shown} holds more data than its manifest.json accounts for (over "
                f"{_mib(self.limit)} decompressed): refused unread (damaged, or not made by spectui record)")
        return n


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


def _member_cap(name: str, manifest: dict[str, Any]) -> int:
    """The most a member may hold by the format (docs/BUNDLE.md "Limits")."""
    if name == mf.LOG:
        log = manifest["log"] if isinstance(manifest.get("log"), dict) else {}
        budget = log.get("budget")
        if not isinstance(budget, int) or isinstance(budget, bool) or not 0 < budget <= lim.MAX_LOG_BUDGET:
            budget = lim.MAX_LOG_BUDGET
        return 5 * budget + lim.LOG_MARKER_SLACK
    if name.startswith(mf.SERVER_INFO_DIR):  # one capped answer, written back indented
        return 4 * lim.HTTP_JSON_BYTES
    if name.startswith(mf.METRICS_DIR):
        return lim.HTTP_METRICS_BYTES
    if name.endswith(".jsonl"):
        return lim.MAX_JSONL_MEMBER_BYTES
    return lim.MAX_JSON_MEMBER_BYTES


def _parse_manifest_head(head: bytes) -> dict[str, Any] | None:
    """The manifest as a dict when it is one (checked in full by read_bundle), else None."""
    try:
        obj = lim.load_json(head)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _planned(shown: str, manifest: dict[str, Any] | None, head_size: int) -> tuple[dict[str, int], int]:
    """Listed member sizes (each within its cap) and the total decompressed budget they allow."""
    sizes: dict[str, int] = {}
    for m in (manifest or {}).get("members") or []:
        if not isinstance(m, dict):
            continue
        name, size = m.get("name"), m.get("size")
        if not isinstance(name, str) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
            continue  # malformed: read_bundle says so
        cap = _member_cap(name, manifest or {})
        if size > cap:
            raise BundleTooLargeError(
                f"bundle {shown}: member {one_line(name)} declares {size:,} bytes, more than a spectui bundle "
                f"holds there ({_mib(cap)}): refused unread")
        sizes[name] = size
    # Each entry: its data rounded up to 512-byte blocks, a header block and a PAX header (name, mtime).
    total = 2 * _TAR_ENTRY + head_size + sum(s + _TAR_ENTRY for s in sizes.values()) + (1 << 20)
    if total > lim.MAX_BUNDLE_BYTES:
        raise BundleTooLargeError(
            f"bundle {shown}: its members add up to {_mib(total)}, over the {_mib(lim.MAX_BUNDLE_BYTES)} a "
            "spectui bundle may hold: refused unread")
    return sizes, total


_TAR_ENTRY = 4096


def read_members(path: Path) -> dict[str, bytes]:
    shown = one_line(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read bundle {shown}: {exc.strerror or exc}") from None
    if size == 0:
        raise BundleTruncatedError(f"bundle {shown} is empty (cut short): copy it again or record it again")
    with open(path, "rb") as f:
        head = f.read(512)
    gzipped = head[:2] == b"\x1f\x8b"
    if not gzipped and head[257:262] != b"ustar":
        raise NotABundleError(
            f"{shown} is not a spectui bundle (not a tar.gz archive): make one with spectui record TARGET -o FILE"
        )
    out: dict[str, bytes] = {}
    try:
        with open(path, "rb") as raw:
            # Streamed, never inflated whole: until the manifest (the first entry) is read the budget is
            # the manifest's own cap; then the members it lists, each within what the format allows.
            # Sparse members (which expand to zeros) and any byte past the budget are refused unread.
            source = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
            budget = _Budget(source, lim.MAX_MANIFEST_BYTES + 2 * _TAR_ENTRY, shown)
            stream = io.BufferedReader(budget, 1 << 16)
            sizes: dict[str, int] | None = None
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for info in tar:
                    if info.issparse():
                        raise BundleCorruptError(
                            f"bundle {shown}: member {one_line(info.name)} is a sparse file, which spectui "
                            "never writes: refused unread")
                    if not info.isfile():
                        continue
                    if sizes is None and info.name != mf.MANIFEST:
                        return out  # not a bundle: the manifest comes first (reported by read_bundle)
                    if sizes is not None and info.name not in sizes:
                        continue  # not listed: ignored, and only read past within the budget
                    if sizes is not None and info.size != sizes[info.name]:
                        raise BundleChecksumError(
                            f"bundle {shown}: member {one_line(info.name)} does not match its size in "
                            "manifest.json (damaged or edited): copy it again or record it again",
                            member=info.name)
                    if sizes is None and info.size > lim.MAX_MANIFEST_BYTES:
                        raise BundleTooLargeError(f"bundle {shown}: manifest.json is {info.size:,} bytes, "
                                                  f"over {_mib(lim.MAX_MANIFEST_BYTES)}: refused unread")
                    handle = tar.extractfile(info)
                    data = handle.read() if handle else b""
                    if len(data) != info.size:
                        raise EOFError
                    out[info.name] = data
                    if sizes is None:
                        sizes, budget.limit = _planned(shown, _parse_manifest_head(data), len(data))
            while stream.read(1 << 16):  # the rest of the gzip stream, to its trailer: a cut bundle fails
                pass
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _cut_short(shown, gzipped, exc) from None
    except tarfile.ReadError as exc:
        if gzipped or "unexpected end" in str(exc) or "truncated" in str(exc):
            raise _cut_short(shown, gzipped, exc) from None
        raise NotABundleError(
            f"{shown} is not a spectui bundle (not a tar.gz archive): make one with spectui record TARGET -o FILE"
        ) from None
    except tarfile.TarError as exc:
        raise _cut_short(shown, gzipped, exc) from None
    except OSError as exc:
        raise InputError(f"cannot read bundle {shown}: {exc.strerror or exc}") from None
    return out


def _cut_short(shown: str, gzipped: bool, exc: BaseException) -> BundleCorruptError:
    text = str(exc).lower()
    if isinstance(exc, EOFError) or "end" in text or "truncated" in text:
        return BundleTruncatedError(
            f"bundle {shown} is cut short (incomplete {'gzip' if gzipped else 'tar'} data): "
            "copy it again in full or record it again"
        )
    return BundleCorruptError(f"bundle {shown} is damaged ({one_line(exc, 80)}): copy it again or record it again")


