"""Launch history: every relaunch recorded as JSON lines in the XDG state directory, and read back.

The file is append-only: a launch is written once when it starts (outcome "running") and again when it
ends; readers merge lines by `id`, later fields winning. A relaunch that was interrupted half-way thus
still shows up (as "running"), and concurrent writers never rewrite each other's lines.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from spectui.core.secrets import masked_flag_value  # the one definition of a secret

Outcome = Literal["running", "healthy", "failed", "rolled_back", "rollback_failed"]


def default_history_path(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/spectui/history.jsonl (default ~/.local/state/spectui/history.jsonl)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or ""
    # The XDG spec says a relative path is invalid and must be ignored.
    root = Path(base) if base and os.path.isabs(base) else Path(env.get("HOME", "~")).expanduser() / ".local/state"
    return root / "spectui" / "history.jsonl"


class FlagChangeRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    flag: str
    old: str | None
    new: str | None


class EnvChangeRecord(BaseModel):
    """One variable of the server's environment a relaunch changed; secret values (HF_TOKEN …) masked."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    name: str
    old: str | None
    new: str | None


def masked_diff(changes: Iterable[Any]) -> list[dict[str, str | None]]:
    """Flag changes (core.launch FlagChange) as history rows, secret values masked."""
    return [{"flag": c.flag, "old": masked_flag_value(c.flag, c.old), "new": masked_flag_value(c.flag, c.new)}
            for c in changes]


def masked_env_diff(changes: Iterable[Any]) -> list[dict[str, str | None]]:
    """Environment changes (ops.relaunch.plan EnvChange) as history rows, secret values masked."""
    from spectui.core.secrets import redact_env

    def one(name: str, v: str | None) -> str | None:
        return None if v is None else redact_env({name: v})[name]

    return [{"name": e.name, "old": one(e.name, e.old), "new": one(e.name, e.new)} for e in changes]


class LaunchRecord(BaseModel):
    """One launch as the history screen shows it. Unknown keys from newer versions are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    id: str
    time: str  # ISO 8601 UTC, when the relaunch started
    host: str
    old_pid: int | None = None
    new_pid: int | None = None
    old_command: str | None = None
    command: str  # the edited command that was launched (shlex-quoted)
    diff: list[FlagChangeRecord] = []
    env_diff: list[EnvChangeRecord] = []  # the environment edits (--set-env / --unset-env), masked
    sglang_version: str | None = None  # bundled version used for the pre-flight verdict
    verdict: str | None = None  # "ok" / "error" / "argparse_error"
    forced: bool = False
    from_known: bool = False  # no server ran: a known command was started (no stop step), old_pid the last one
    log: str | None = None
    outcome: Outcome = "running"
    error: str | None = None
    rollback_pid: int | None = None
    rollback_log: str | None = None
    accept_len: float | None = None  # the mean accept length the new launch reached (None: none seen)
    gen_tokens_per_s: float | None = None
    diagnoses: list[str] = []  # "RULE: title" of what the rules said about a failed launch
    ended: str | None = None
    group: str | None = None  # one id for every node of a multi-node / PD group relaunched together
    node: str | None = None  # that node's role in the group ("node 1/2", "prefill")
    cwd: str | None = None  # the new server's working directory (to start it again once it is gone)
    env: dict[str, str] = {}  # its launch-steering variables (SGLANG_*, CUDA_* …), secret values masked
    owner_uid: int | None = None  # the user the new server runs as (its owner), when known (#26)
    owner_user: str = ""

    def changes_summary(self) -> str:
        """Flag and environment changes in one line ("–" when it was a plain restart)."""
        parts = [f"{c.flag} {c.old or '∅'}→{c.new or '∅'}" for c in self.diff]
        parts += [f"env {e.name} {e.old if e.old is not None else '∅'}→{e.new if e.new is not None else '∅'}"
                  for e in self.env_diff]
        return ", ".join(parts) or "–"


LAUNCH_ENV_PREFIXES = ("SGLANG_", "SGL_", "NCCL_", "CUDA_", "SPECTUI_SIM_", "HF_", "TORCH_", "PYTORCH_",
                       "TRITON_", "FLASHINFER_")


def launch_env_record(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of a server's environment history keeps (those that steer SGLang), secrets masked."""
    from spectui.core.secrets import redact_env

    return redact_env({k: v for k, v in env.items() if k.startswith(LAUNCH_ENV_PREFIXES)})


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class HistoryStore:
    """Append and read launch records. `path` defaults to the XDG location."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_history_path()

    def append(self, record: LaunchRecord) -> None:
        self._write(record.model_dump(mode="json"))

    def update(self, launch_id: str, **fields: Any) -> None:
        """Record later facts about a launch (outcome, accept len reached …) without rewriting the file."""
        LaunchRecord.model_validate({"id": launch_id, "time": "", "host": "", "command": "", **fields})
        self._write({"id": launch_id, **fields})

    def read(self, *, host: str | None = None, limit: int | None = None) -> list[LaunchRecord]:
        """Launches oldest first (the last `limit` of them), optionally only those on `host`.

        Lines that do not parse (a torn write, a hand edit) are skipped, never fatal: history is a
        convenience and must not stop a relaunch or the TUI from working.
        """
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        merged: dict[str, dict[str, Any]] = {}
        for line in text.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
                continue
            merged.setdefault(obj["id"], {}).update(obj)
        records: list[LaunchRecord] = []
        for obj in merged.values():
            try:
                records.append(LaunchRecord.model_validate(obj))
            except ValidationError:
                continue
        if host is not None:
            records = [r for r in records if r.host == host]
        records.sort(key=lambda r: r.time)
        return records[-limit:] if limit else records

    def get(self, launch_id: str) -> LaunchRecord | None:
        return next((r for r in self.read() if r.id == launch_id), None)

    def _write(self, obj: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        # One write() of one line under an exclusive lock: two spectui processes relaunching at once
        # (two terminals, TUI + CLI) interleave whole lines, never halves.
        with open(self.path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(line)
                fh.flush()
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def read_history(*, host: str | None = None, limit: int | None = None, path: Path | str | None = None) -> list[LaunchRecord]:
    """The read API for the TUI's history screen: launches oldest first."""
    return HistoryStore(path).read(host=host, limit=limit)
