"""Reading an incident bundle: `read_bundle(path) -> Bundle`, checked member by member against the
manifest; every problem is one typed, one-line `BundleError`."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.bundle import manifest as mf
from spectui.bundle.errors import (
    BundleChecksumError,
    BundleCorruptError,
    BundleTruncatedError,
    BundleVersionError,
    NotABundleError,
    one_line,
)
from spectui.bundle.logcut import CUT_MARK_RE, timed_lines
from spectui.bundle.untar import read_members as _read_members
from spectui.core import limits as lim


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
            SeriesPoint(**{k: row.get(k) for k in known}, extra={k: v for k, v in row.items() if k not in known})
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
