"""Where a traceback died: its frames mapped to SGLang subsystems (data: rules/_frames.toml).

`died_in(frames)` reads a traceback's frames from the innermost outwards and returns the subsystem of the
first frame the map knows (`subsystem`), every subsystem any frame maps to (`through`, innermost first) and
the innermost SGLang frame (the evidence). It needs no exception line: a traceback cut before it is judged
by its frames alone. Computed once per distinct frame tuple.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

FRAMES_FILE = "_frames.toml"


@dataclass(frozen=True, slots=True)
class Subsystem:
    id: str
    name: str
    file: re.Pattern[str]
    func: re.Pattern[str] | None
    source: re.Pattern[str] | None = None  # searched in the source line printed under the frame


@dataclass(frozen=True, slots=True)
class Died:
    subsystem: str | None  # id of the innermost frame that maps to a subsystem
    name: str  # its readable name ("" when none maps)
    through: tuple[str, ...]  # every subsystem a frame maps to, innermost first, each once
    sglang_func: str  # innermost SGLang frame (the evidence): function, short path, line
    sglang_file: str
    sglang_line: int

    def captures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"through": ", ".join(self.through)}
        if self.subsystem is not None:
            out.update(subsystem=self.subsystem, subsystem_name=self.name)
        if self.sglang_func:
            out.update(sglang_func=self.sglang_func, sglang_file=self.sglang_file, sglang_line=self.sglang_line,
                       sglang_frame=f"{self.sglang_func} ({self.sglang_file}:{self.sglang_line})")
        return out


class FrameMapError(ValueError):
    pass


def parse_frame_map(text: str, label: str = FRAMES_FILE) -> tuple[Subsystem, ...]:
    """The map's entries, in file order; FrameMapError names the entry and field of a bad one."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FrameMapError(f"{label}: TOML syntax error: {exc}") from None
    unknown = set(data) - {"subsystem"}
    if unknown:
        raise FrameMapError(f"{label}: unknown key {sorted(unknown)[0]!r} (only [[subsystem]] tables)")
    out: list[Subsystem] = []
    for i, entry in enumerate(data.get("subsystem", [])):
        where = f"{label}: subsystem {i + 1}"
        extra = set(entry) - {"id", "name", "file", "func", "source"}
        if extra:
            raise FrameMapError(f"{where}: unknown field {sorted(extra)[0]!r}")
        for key in ("id", "name", "file"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise FrameMapError(f"{where}: field {key!r} must be a non-empty string")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", entry["id"]):
            raise FrameMapError(f"{where}: field 'id' must be lower_snake_case")
        try:
            file_re = re.compile(entry["file"])
            func_re = re.compile(entry["func"]) if entry.get("func") else None
            source_re = re.compile(entry["source"]) if entry.get("source") else None
        except re.error as exc:
            raise FrameMapError(f"{where}: bad regex: {exc}") from None
        out.append(Subsystem(entry["id"], entry["name"], file_re, func_re, source_re))
    return tuple(out)


@lru_cache(maxsize=1)
def frame_map() -> tuple[Subsystem, ...]:
    """The built-in map (rules/_frames.toml, shipped in spectui.builtin_rules)."""
    path = resources.files("spectui.builtin_rules").joinpath(FRAMES_FILE)
    return parse_frame_map(path.read_text(encoding="utf-8"))


def subsystem_ids() -> frozenset[str]:
    return frozenset(s.id for s in frame_map())


def _short(path: str) -> str:
    """'/opt/conda/lib/python3.10/site-packages/sglang/srt/x.py' -> 'sglang/srt/x.py'."""
    cut = path.rfind("/sglang/")
    return path[cut + 1:] if cut >= 0 else path


def _is_sglang(path: str) -> bool:
    return "sglang/" in path.replace("\\", "/")


@lru_cache(maxsize=512)
def died_in(frames: tuple[Any, ...]) -> Died | None:
    """None for a traceback without frames."""
    if not frames:
        return None
    entries = frame_map()
    first: Subsystem | None = None
    through: list[str] = []
    sglang: Any = None
    for frame in reversed(frames):
        path = frame.file.replace("\\", "/")
        if sglang is None and _is_sglang(path):
            sglang = frame
        for entry in entries:
            if (entry.file.search(path) and (entry.func is None or entry.func.fullmatch(frame.func))
                    and (entry.source is None or entry.source.search(frame.source))):
                if first is None:
                    first = entry
                if entry.id not in through:
                    through.append(entry.id)
                break
    return Died(
        subsystem=first.id if first else None, name=first.name if first else "", through=tuple(through),
        sglang_func=sglang.func if sglang is not None else "",
        sglang_file=_short(sglang.file) if sglang is not None else "",
        sglang_line=sglang.lineno if sglang is not None else 0,
    )
