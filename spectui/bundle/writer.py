"""Writing an incident bundle: `write_bundle(path, parts)` or the incremental `BundleWriter`.

The caller (`spectui record`) collects plain dicts and bytes; this module cuts the log to its budget,
masks every secret in every member (whatever the caller passed), checks that no harvested secret value
is left in any byte, and writes one tar.gz with `manifest.json` first.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shlex
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.bundle import manifest as mf
from spectui.bundle.logcut import DEFAULT_LOG_BUDGET, cut_log
from spectui.bundle.masking import Masker
from spectui.core.limits import MAX_LOG_BUDGET
from spectui.errors import InputError

SERIES_FIELDS = ("t", "accept_len", "gen_tokens_per_s", "running_req", "queue_req")
_SERIES_ALIASES = {
    "tok_s": "gen_tokens_per_s", "tokens_per_s": "gen_tokens_per_s", "gen_throughput": "gen_tokens_per_s",
    "running": "running_req", "queued": "queue_req", "queue": "queue_req", "accept_length": "accept_len",
}


@dataclass
class BundleParts:
    """Everything a bundle holds, as plain data. Times are epoch seconds (float)."""

    target: str | None = None
    sglang_version: str | None = None
    log: bytes | str = b""  # the whole log file (or as much as was read); cut to log_budget here
    log_budget: int = DEFAULT_LOG_BUDGET
    log_start_offset: int | None = None  # byte offset where the current launch starts, when known
    launch: Mapping[str, Any] | None = None  # {"command": str | [argv], "env": {...}, "cwd": ..., ...}
    config: Mapping[str, Any] | None = None  # {"requested": {...}, "effective": {...}, "verdict": ...}
    server_info: list[tuple[float, Mapping[str, Any]]] = field(default_factory=list)
    metrics: list[tuple[float, bytes | str]] = field(default_factory=list)
    series: list[Mapping[str, Any]] = field(default_factory=list)  # {"t", "accept_len", "gen_tokens_per_s", ...}
    diagnoses: list[Mapping[str, Any]] = field(default_factory=list)  # check --json shape
    history: Mapping[str, Any] | None = None  # {"launches": [...], "bench": [bench --json, ...]}
    inspect: Mapping[str, Any] | None = None  # inspect --json (optional member)
    gpu: list[Mapping[str, Any]] = field(default_factory=list)  # {"t", "index", "name", "memory_used_mib", ...}
    window: tuple[float, float] | None = None  # default: the span of all timed data
    created: float | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)  # name -> value, masked everywhere too


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n").encode()


def _jsonl(rows: Sequence[Any]) -> bytes:
    return b"".join((json.dumps(r, ensure_ascii=False, default=str) + "\n").encode() for r in rows)


def _series_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in SERIES_FIELDS}
    for key, value in row.items():
        out[_SERIES_ALIASES.get(key, key)] = value
    return out


def _t(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _harvest(masker: Masker, parts: BundleParts) -> None:
    for name, value in parts.secrets.items():
        masker.add(name, value)
    launch = dict(parts.launch or {})
    masker.harvest_env(launch.get("env") or {})
    masker.harvest_command(launch.get("command"))
    masker.harvest_json({k: v for k, v in launch.items() if k not in ("env", "command")})
    for obj in (parts.config, parts.history, parts.inspect, parts.diagnoses, parts.series, parts.gpu):
        masker.harvest_json(obj)
    for _, info in parts.server_info:
        masker.harvest_json(info)
    for _, text in parts.metrics:
        masker.harvest_text(text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else text)
    masker.harvest_text(parts.target or "")


def _launch_member(masker: Masker, launch: Mapping[str, Any]) -> dict[str, Any]:
    env = launch.get("env") or {}
    command = launch.get("command")
    out: dict[str, Any] = {"command": None, "argv": None}
    if isinstance(command, str):
        out["command"] = masker.scrub_text(command, mf.LAUNCH)
    elif command:
        line = masker.scrub_argv([str(w) for w in command], env, mf.LAUNCH)
        out["command"] = line
        try:
            out["argv"] = shlex.split(line)
        except ValueError:
            out["argv"] = None
    out["env"] = masker.scrub_env(env, mf.LAUNCH)
    for key, value in launch.items():
        if key not in ("command", "env", "argv"):
            out[key] = masker.scrub_json(value, mf.LAUNCH)
    return out


def build_members(parts: BundleParts, masker: Masker) -> tuple[list[tuple[mf.MemberInfo, bytes]], dict]:
    """The members' final (masked) bytes in archive order, and the manifest's log info."""
    log = parts.log.encode("utf-8", "surrogateescape") if isinstance(parts.log, str) else bytes(parts.log)
    if not 0 < parts.log_budget <= MAX_LOG_BUDGET:  # what a reader accepts (docs/BUNDLE.md "Limits")
        raise InputError(f"--log-bytes {parts.log_budget:,}: the log budget of a bundle is at most "
                         f"{MAX_LOG_BUDGET >> 20} MiB")
    _harvest(masker, parts)
    body, log_info = cut_log(log, parts.log_budget, start_offset=parts.log_start_offset)
    # The whole log for flag values, URLs and token shapes; `name=value` only in the kept lines.
    masker.harvest_text(log.decode("utf-8", "surrogateescape"), assignments=len(body) == len(log))
    if len(body) != len(log):
        masker.harvest_text(body.decode("utf-8", "surrogateescape"))
    raw: list[tuple[str, bytes, float | None]] = [(mf.LOG, masker.scrub_bytes(body, mf.LOG), None)]
    raw.append((mf.LAUNCH, _dump(_launch_member(masker, parts.launch or {})), None))
    config = {"requested": None, "effective": None, "verdict": None, **dict(parts.config or {})}
    raw.append((mf.CONFIG, _dump(masker.scrub_json(config, mf.CONFIG)), None))
    for i, (t, info) in enumerate(sorted(parts.server_info, key=lambda p: p[0])):
        name = f"{mf.SERVER_INFO_DIR}{i:04d}.json"
        raw.append((name, _dump(masker.scrub_json(info, name)), float(t)))
    for i, (t, text) in enumerate(sorted(parts.metrics, key=lambda p: p[0])):
        name = f"{mf.METRICS_DIR}{i:04d}.prom"
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
        raw.append((name, masker.scrub_bytes(data, name), float(t)))
    rows = sorted((_series_row(r) for r in parts.series), key=lambda r: _t(r["t"]) or 0.0)
    raw.append((mf.SERIES, _jsonl(masker.scrub_json(rows, mf.SERIES)), None))
    raw.append((mf.DIAGNOSES, _dump(masker.scrub_json(list(parts.diagnoses), mf.DIAGNOSES)), None))
    history = {"launches": [], "bench": [], **dict(parts.history or {})}
    raw.append((mf.HISTORY, _dump(masker.scrub_json(history, mf.HISTORY)), None))
    if parts.inspect is not None:
        raw.append((mf.INSPECT, _dump(masker.scrub_json(parts.inspect, mf.INSPECT)), None))
    if parts.gpu:
        raw.append((mf.GPU, _jsonl(masker.scrub_json(list(parts.gpu), mf.GPU)), None))
    members = []
    for name, data, taken in raw:
        data = masker.final_pass(data, name)
        members.append((mf.MemberInfo(name, len(data), mf.sha256(data), taken), data))
    return members, log_info


def _window(parts: BundleParts, created: float) -> mf.Window:
    if parts.window:
        return mf.Window(float(parts.window[0]), float(parts.window[1]))
    times = [t for t, _ in parts.server_info] + [t for t, _ in parts.metrics]
    times += [t for r in (*parts.series, *parts.gpu) if (t := _t(r.get("t"))) is not None]
    return mf.Window(min(times), max(times)) if times else mf.Window(created, created)


def _tarinfo(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_bundle(path: str | os.PathLike[str], parts: BundleParts) -> mf.Manifest:
    """Write the bundle atomically (a temp file beside `path`, then renamed) and return its manifest."""
    masker = Masker()
    created = parts.created if parts.created is not None else time.time()
    members, log_info = build_members(parts, masker)
    manifest = mf.Manifest(
        format_version=mf.FORMAT_VERSION,
        spectui_version=mf.spectui_version(),
        sglang_version=masker.scrub_text(parts.sglang_version) if parts.sglang_version else None,
        created=created,
        target=masker.scrub_text(parts.target, mf.MANIFEST) if parts.target else None,
        window=_window(parts, created),
        members=tuple(info for info, _ in members),
        masked=tuple(masker.masked_names()),
        log=log_info,
    )
    head = masker.final_pass(_dump(manifest.to_json()), mf.MANIFEST)
    for name, data in [(mf.MANIFEST, head), *((i.name, d) for i, d in members)]:
        leaked = masker.leaks(data)
        if leaked:  # cannot happen after final_pass; never write a bundle that would leak
            raise RuntimeError(f"secret {', '.join(leaked)} still present in {name}; bundle not written")
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as raw_file:
            with (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw_file, mtime=int(created)) as gz,
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
            ):
                for name, data in [(mf.MANIFEST, head), *((i.name, d) for i, d in members)]:
                    tar.addfile(_tarinfo(name, len(data), created), io.BytesIO(data))
            raw_file.flush()
            os.fsync(raw_file.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return manifest


class BundleWriter:
    """Collect parts over time, then `close()` (or leave the `with` block) to write the bundle.
    Nothing is written when the block raises."""

    def __init__(self, path: str | os.PathLike[str], *, target: str | None = None,
                 sglang_version: str | None = None, log_budget: int = DEFAULT_LOG_BUDGET) -> None:
        self.path = path
        self.parts = BundleParts(target=target, sglang_version=sglang_version, log_budget=log_budget)
        self.manifest: mf.Manifest | None = None

    def set_log(self, data: bytes | str, *, start_offset: int | None = None) -> None:
        self.parts.log, self.parts.log_start_offset = data, start_offset

    def set_launch(self, command: str | Sequence[str], env: Mapping[str, str] | None = None, **extra: Any) -> None:
        self.parts.launch = {"command": command, "env": dict(env or {}), **extra}

    def set_config(self, requested: Mapping[str, Any], effective: Mapping[str, Any] | None = None,
                   verdict: Any = None, **extra: Any) -> None:
        self.parts.config = {"requested": dict(requested), "effective": effective, "verdict": verdict, **extra}

    def add_server_info(self, t: float, info: Mapping[str, Any]) -> None:
        self.parts.server_info.append((t, info))

    def add_metrics(self, t: float, text: bytes | str) -> None:
        self.parts.metrics.append((t, text))

    def add_sample(self, t: float, **values: Any) -> None:
        self.parts.series.append({"t": t, **values})

    def add_gpu_sample(self, sample: Mapping[str, Any]) -> None:
        self.parts.gpu.append(sample)

    def set_diagnoses(self, diagnoses: Sequence[Mapping[str, Any]]) -> None:
        self.parts.diagnoses = list(diagnoses)

    def set_history(self, history: Mapping[str, Any]) -> None:
        self.parts.history = history

    def set_inspect(self, inspect: Mapping[str, Any] | None) -> None:
        self.parts.inspect = inspect

    def add_secret(self, name: str, value: str) -> None:
        self.parts.secrets = {**self.parts.secrets, name: value}

    def close(self) -> mf.Manifest:
        if self.manifest is None:
            self.manifest = write_bundle(self.path, self.parts)
        return self.manifest

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self.close()
