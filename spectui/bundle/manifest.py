"""The bundle's `manifest.json`: its version, its members and their checksums (docs/BUNDLE.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

FORMAT_VERSION = 1  # the newest format this spectui writes and reads
MANIFEST = "manifest.json"
LOG = "log.txt"
LAUNCH = "launch.json"
CONFIG = "config.json"
SERIES = "series.jsonl"
DIAGNOSES = "diagnoses.json"
HISTORY = "history.json"
INSPECT = "inspect.json"
GPU = "gpu.jsonl"
SERVER_INFO_DIR = "server_info/"
METRICS_DIR = "metrics/"
SUFFIX = ".spectui.tar.gz"  # the suggested file name ending; any name is read


def spectui_version() -> str:
    try:
        return metadata.version("spectui")
    except metadata.PackageNotFoundError:
        return "unknown"


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class MemberInfo:
    name: str
    size: int
    sha256: str
    t: float | None = None  # snapshot time (server_info/, metrics/), epoch seconds

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "size": self.size, "sha256": self.sha256}
        if self.t is not None:
            out["t"] = self.t
        return out


@dataclass(frozen=True, slots=True)
class Window:
    start: float | None
    end: float | None

    @property
    def duration(self) -> float | None:
        return None if self.start is None or self.end is None else max(0.0, self.end - self.start)

    def to_json(self) -> dict[str, Any]:
        return {"start": iso(self.start), "end": iso(self.end), "start_t": self.start, "end_t": self.end}


@dataclass(frozen=True, slots=True)
class Manifest:
    format_version: int
    spectui_version: str
    sglang_version: str | None
    created: float
    target: str | None
    window: Window
    members: tuple[MemberInfo, ...]
    masked: tuple[dict[str, Any], ...] = ()  # [{"name": "HF_TOKEN", "members": ["launch.json", ...]}]
    log: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # fields this spectui does not know (newer minor)

    @property
    def masked_names(self) -> list[str]:
        return [m["name"] for m in self.masked]

    def member(self, name: str) -> MemberInfo | None:
        return next((m for m in self.members if m.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "spectui-bundle",
            "format_version": self.format_version,
            "spectui_version": self.spectui_version,
            "sglang_version": self.sglang_version,
            "created": iso(self.created),
            "created_t": self.created,
            "target": self.target,
            "window": self.window.to_json(),
            "members": [m.to_json() for m in self.members],
            "masked": list(self.masked),
            "log": self.log,
            **self.extra,
        }


_KNOWN = {"format", "format_version", "spectui_version", "sglang_version", "created", "created_t", "target",
          "window", "members", "masked", "log"}


def _opt(obj: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = obj.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise ValueError(f"{key} is a {type(value).__name__}")
    return value


def manifest_from_json(obj: dict[str, Any]) -> Manifest:
    """A validated manifest; raises ValueError (the reader words it) on a malformed one: a field of the
    wrong type is refused here, not met later as a traceback."""
    members = []
    raw_members = obj.get("members") or []
    if not isinstance(raw_members, list):
        raise ValueError("members is not a list")
    for m in raw_members:
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise ValueError("a member entry has no name")
        size, digest = m.get("size"), m.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or not isinstance(digest, str):
            raise ValueError(f"member {m['name']} has no size or sha256")
        members.append(MemberInfo(m["name"], size, digest.lower(), _opt(m, "t", (int, float))))
    window = obj.get("window") or {}
    if not isinstance(window, dict):
        raise ValueError("window is not an object")
    created = obj.get("created_t")
    masked = obj.get("masked") or []
    if not isinstance(masked, list):
        raise ValueError("masked is not a list")
    version = obj["format_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("format_version is not an integer")
    return Manifest(
        format_version=version,
        spectui_version=str(obj.get("spectui_version") or "unknown"),
        sglang_version=_opt(obj, "sglang_version", str),
        created=float(created) if isinstance(created, int | float) and not isinstance(created, bool) else 0.0,
        target=_opt(obj, "target", str),
        window=Window(_opt(window, "start_t", (int, float)), _opt(window, "end_t", (int, float))),
        members=tuple(members),
        masked=tuple(m for m in masked if isinstance(m, dict) and isinstance(m.get("name"), str)),
        log=obj["log"] if isinstance(obj.get("log"), dict) else {},
        extra={k: v for k, v in obj.items() if k not in _KNOWN},
    )
