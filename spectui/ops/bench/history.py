"""bench.jsonl, the bench results spectui recorded (ops.bench.run appends them beside the launch history):
where it is and the one reader every consumer uses (the bench's history baseline, the cockpit's ×N
baseline, the sweep's time estimate, `spectui advise`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spectui.ops.history import HistoryStore


def bench_history_path(history_path: Path | str | None = None) -> Path:
    """bench.jsonl beside the launch history file (`history_path`, default the XDG state folder's)."""
    return HistoryStore(history_path).path.with_name("bench.jsonl")


def bench_records(history_path: Path | str | None = None, *, host: str | None = None) -> list[dict[str, Any]]:
    """Every readable record, oldest first: a JSON object whose `result` is an object (`host`: only that
    host's). A missing or unreadable file is no records; a line that is not such an object is skipped."""
    try:
        lines = bench_history_path(history_path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("result"), dict) and (host is None or obj.get("host") == host):
            out.append(obj)
    return out
