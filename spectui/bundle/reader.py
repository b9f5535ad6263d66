"""Reading an incident bundle: `read_bundle(path) -> Bundle`, checked member by member against the
manifest; every problem is one typed, one-line `BundleError`."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.bundle import manifest as mf
from spectui.bundle.errors import (
    BundleChecksumError,
    BundleCorruptError,
    BundleTooLargeError,
    BundleTruncatedError,
    BundleVersionError,
    NotABundleError,
    one_line,
)
from spectui.bundle.logcut import CUT_MARK_RE, timed_lines
from spectui.core import limits as lim
from spectui.errors import InputError


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One server_info/*.json (data: dict) or metrics/*.prom (data: str) snapshot."""

    name: str
    t: float | None
    data: Any


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    t: float | None
    accept_len: float | None = None
    gen_tokens_per_s: float | None = None
    running_req: int | None = None
    queue_req: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReplayEvent:
    t: float  # seconds after the start of the replay, already divided by the speed
    kind: str  # "line" | "sample"
    data: Any  # str for a line, SeriesPoint for a sample


def is_bundle(path: str | os.PathLike[str]) -> bool:
    """Cheap sniff for `check FILE` / `connect FILE`: a gzip whose first tar member is manifest.json."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return False
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as gz:
                header = gz.read(512)
    except (OSError, EOFError, zlib.error):
        return False
    return header[:100].rstrip(b"\0") == mf.MANIFEST.encode()


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
        log = manifest.get("log") if isinstance(manifest.get("log"), dict) else {}
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


def _read_members(path: Path) -> dict[str, bytes]:
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


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    p = Path(path)
    shown = one_line(p)
    members = _read_members(p)
    head = members.pop(mf.MANIFEST, None)
    if head is None:
        raise NotABundleError(
            f"{shown} is a tar archive but not a spectui bundle (no manifest.json): "
            "make one with spectui record TARGET -o FILE"
        )
    try:
        obj = lim.load_json(head)
        if not isinstance(obj, dict) or not isinstance(obj.get("format_version"), int):
            raise ValueError("no integer format_version")
        version = obj["format_version"]
        if version > mf.FORMAT_VERSION:
            raise BundleVersionError(shown, version, mf.FORMAT_VERSION)
        if version < 1:
            raise ValueError(f"format_version {version}")
        manifest = mf.manifest_from_json(obj)
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
        raise NotABundleError(f"{shown}: manifest.json is not a spectui manifest ({one_line(exc, 80)})") from None
    for info in manifest.members:
        data = members.get(info.name)
        if data is None:
            raise BundleTruncatedError(
                f"bundle {shown} is cut short: member {one_line(info.name)} listed in manifest.json is missing"
            )
        if len(data) != info.size or mf.sha256(data) != info.sha256:
            raise BundleChecksumError(
                f"bundle {shown}: member {one_line(info.name)} does not match its sha256 in manifest.json "
                "(damaged or edited): copy it again or record it again",
                member=info.name,
            )
    listed = {m.name for m in manifest.members}
    return Bundle(p, manifest, {k: v for k, v in members.items() if k in listed})


class Bundle:
    """A verified bundle in memory. Members absent from the bundle read as empty/None."""

    def __init__(self, path: Path, manifest: mf.Manifest, members: dict[str, bytes]) -> None:
        self.path = path
        self.manifest = manifest
        self._members = members
        self._json: dict[str, Any] = {}

    # ---- raw access ---------------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [m.name for m in self.manifest.members]

    def member(self, name: str) -> bytes | None:
        return self._members.get(name)

    def _load(self, name: str, default: Any) -> Any:
        if name not in self._json:
            data = self._members.get(name)
            try:
                if data is None:
                    value = default
                elif name.endswith(".jsonl"):
                    value = [lim.load_json(line) for line in data.decode().splitlines() if line.strip()]
                else:
                    value = lim.load_json(data)
            except (ValueError, UnicodeDecodeError):
                raise BundleCorruptError(
                    f"bundle {one_line(self.path)}: member {name} is not valid JSON: record it again"
                ) from None
            self._json[name] = value
        return self._json[name]

    # ---- typed accessors ----------------------------------------------------------------------------
    @property
    def sglang_version(self) -> str | None:
        return self.manifest.sglang_version

    @property
    def target(self) -> str | None:
        return self.manifest.target

    @property
    def log_info(self) -> dict[str, Any]:
        return self.manifest.log

    @property
    def log_bytes(self) -> bytes:
        return self._members.get(mf.LOG, b"")

    def log_text(self) -> str:
        return self.log_bytes.decode("utf-8", "replace")

    def log_lines(self) -> list[str]:
        """The log member's lines (cut markers included), split as the writer split them."""
        return [r.decode("utf-8", "replace").rstrip("\r\n") for r in self.log_bytes.splitlines(keepends=True)]

    def original_line(self, n: int) -> int | None:
        """The original log's line number of bundle log line `n` (1-based); None for a cut marker."""
        for start, orig, count in self.manifest.log.get("line_map") or []:
            if start <= n < start + count:
                return orig + (n - start)
        return None if self.manifest.log.get("line_map") else n

    @staticmethod
    def is_cut_marker(line: str) -> bool:
        return bool(CUT_MARK_RE.match(line))

    @property
    def launch(self) -> dict[str, Any]:
        return self._load(mf.LAUNCH, {}) or {}

    @property
    def launch_command(self) -> str | None:
        return self.launch.get("command")

    @property
    def config(self) -> dict[str, Any]:
        return self._load(mf.CONFIG, {}) or {}

    @property
    def requested(self) -> dict[str, Any]:
        return self.config.get("requested") or {}

    @property
    def effective(self) -> dict[str, Any] | None:
        return self.config.get("effective")

    @property
    def verdict(self) -> Any:
        return self.config.get("verdict")

    def _snapshots(self, prefix: str, as_json: bool) -> list[Snapshot]:
        out = []
        for info in self.manifest.members:
            if info.name.startswith(prefix):
                data = self._load(info.name, None) if as_json else self._members[info.name].decode("utf-8", "replace")
                out.append(Snapshot(info.name, info.t, data))
        return out

    @property
    def server_info(self) -> list[Snapshot]:
        return self._snapshots(mf.SERVER_INFO_DIR, True)

    @property
    def metrics(self) -> list[Snapshot]:
        return self._snapshots(mf.METRICS_DIR, False)

    @property
    def series(self) -> list[SeriesPoint]:
        known = ("t", "accept_len", "gen_tokens_per_s", "running_req", "queue_req")
        return [
            SeriesPoint(*(row.get(k) for k in known), extra={k: v for k, v in row.items() if k not in known})
            for row in self._load(mf.SERIES, [])
            if isinstance(row, dict)
        ]

    @property
    def diagnoses(self) -> list[dict[str, Any]]:
        return [d for d in self._load(mf.DIAGNOSES, []) or [] if isinstance(d, dict)]

    @property
    def history(self) -> dict[str, Any]:
        return self._load(mf.HISTORY, {}) or {}

    @property
    def inspect(self) -> dict[str, Any] | None:
        return self._load(mf.INSPECT, None)

    @property
    def gpu(self) -> list[dict[str, Any]]:
        return [g for g in self._load(mf.GPU, []) or [] if isinstance(g, dict)]

    # ---- replay -------------------------------------------------------------------------------------
    def log_replay(self, speed: float = 1.0, *, spacing: float | None = None) -> Iterator[tuple[float, str]]:
        """(t_offset, line) for every log line, t_offset in replay seconds (real time / speed). Lines use
        their own timestamps when the log has them, else even spacing over the recorded window."""
        lines = self.log_lines()
        if spacing is None:
            duration = self.manifest.window.duration
            spacing = duration / len(lines) if duration and lines else 0.05
        scale = 1.0 / speed if speed > 0 else 0.0
        for t, line in timed_lines(lines, spacing=spacing):
            yield t * scale, line

    def replay(self, speed: float = 1.0) -> Iterator[ReplayEvent]:
        """Log lines and series samples merged in time order. Each stream starts at offset 0 (log
        timestamps are the server's local clock, series times are epoch seconds)."""
        scale = 1.0 / speed if speed > 0 else 0.0
        points = [p for p in self.series if isinstance(p.t, int | float)]
        base = points[0].t if points else 0.0
        samples = iter([ReplayEvent((p.t - base) * scale, "sample", p) for p in points])  # type: ignore[operator]
        lines = (ReplayEvent(t, "line", line) for t, line in self.log_replay(speed))
        yield from _merge(lines, samples)


def _merge(a: Iterator[ReplayEvent], b: Iterator[ReplayEvent]) -> Iterator[ReplayEvent]:
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x.t <= y.t):
            yield x  # type: ignore[misc]
            x = next(a, None)
        else:
            yield y
            y = next(b, None)
