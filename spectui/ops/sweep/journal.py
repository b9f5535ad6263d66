"""The sweep's journal: a JSONL file written as the sweep goes, so `--resume FILE` skips what is done.

Line 1: {"type": "sweep", "format": 1, "host", "grid": [{"label", "values"}], "original": {label: value},
         "workload", "started"}
Then one {"type": "config", "index", "key", ...the config's result...} per finished config (ok or failed),
{"type": "baseline", "baseline"} once a --baseline is measured (a resume reuses it),
and {"type": "end", "applied", "launches", "interrupted"} when a run ends. A config interrupted half-way
has no line: a resumed sweep runs it again. Lines that do not parse (a torn write) are skipped.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.errors import UsageError
from spectui.ops.history import default_history_path, now_iso

FORMAT = 1
DONE = ("ok", "failed")


def default_journal_path(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/spectui/sweeps/sweep-<UTC stamp>-<pid>.jsonl."""
    stamp = now_iso().replace(":", "").replace("-", "").replace("+0000", "Z")
    return default_history_path(environ).parent / "sweeps" / f"sweep-{stamp}-{os.getpid()}.jsonl"


@dataclass
class Journal:
    path: Path
    header: dict[str, Any] | None = None
    done: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> the config's entry
    baseline: dict[str, Any] | None = None  # --baseline: measured once, reused by a resume

    @classmethod
    def read(cls, path: Path | str) -> Journal:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"--resume {path}: cannot read it ({exc.strerror or exc})") from None
        j = cls(p)
        for line in text.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("type") == "sweep" and j.header is None:
                j.header = obj
            elif obj.get("type") == "baseline" and isinstance(obj.get("baseline"), dict):
                j.baseline = obj["baseline"]
            elif obj.get("type") == "config" and isinstance(obj.get("index"), int) and obj.get("status") in DONE:
                j.done[obj["index"]] = obj
        if j.header is None or j.header.get("format") != FORMAT:
            raise UsageError(f"--resume {path}: not a spectui sweep journal (no sweep header of format {FORMAT})")
        return j

    def start(self, header: dict[str, Any]) -> None:
        self.header = {"type": "sweep", "format": FORMAT, "started": now_iso(), **header}
        self._write(self.header)

    def add(self, entry: dict[str, Any]) -> None:
        self.done[entry["index"]] = {"type": "config", **entry}
        self._write(self.done[entry["index"]])

    def add_baseline(self, baseline: dict[str, Any]) -> None:
        self.baseline = baseline
        self._write({"type": "baseline", "time": now_iso(), "baseline": baseline})

    def end(self, **fields: Any) -> None:
        self._write({"type": "end", "time": now_iso(), **fields})

    def _write(self, obj: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
                fh.flush()
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
