"""Launch history: JSONL in the XDG state dir, merged by id, tolerant of torn lines."""

from __future__ import annotations

import json
from pathlib import Path

from spectui.ops.history import HistoryStore, LaunchRecord, default_history_path, read_history


def _record(i: int, host: str = "local") -> LaunchRecord:
    return LaunchRecord(id=f"id{i}", time=f"2026-11-30T15:0{i}:00+00:00", host=host,
                        command=f"python -m sglang.launch_server --speculative-num-steps {i}",
                        diff=[{"flag": "--speculative-num-steps", "old": "1", "new": str(i)}])


def test_default_path_follows_xdg_state_home(tmp_path: Path) -> None:
    assert default_history_path({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "spectui/history.jsonl"
    assert default_history_path({"HOME": "/home/op"}) == Path("/home/op/.local/state/spectui/history.jsonl")
    # A relative XDG_STATE_HOME is invalid per the spec and ignored.
    assert default_history_path({"XDG_STATE_HOME": "rel", "HOME": "/h"}) == Path("/h/.local/state/spectui/history.jsonl")


def test_append_then_update_merges_by_id(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.jsonl")
    store.append(_record(1))
    store.append(_record(2, host="root@gpu1"))
    store.update("id1", outcome="healthy", new_pid=4242, accept_len=3.9, gen_tokens_per_s=120.5)
    got = store.read()
    assert [r.id for r in got] == ["id1", "id2"]
    assert got[0].outcome == "healthy" and got[0].new_pid == 4242 and got[0].accept_len == 3.9
    assert got[1].outcome == "running"
    assert got[0].diff[0].flag == "--speculative-num-steps" and got[0].diff[0].new == "1"
    assert [r.id for r in read_history(path=store.path, host="root@gpu1")] == ["id2"]
    assert [r.id for r in store.read(limit=1)] == ["id2"]
    assert len(store.path.read_text().splitlines()) == 3  # append-only: nothing rewritten


def test_torn_and_foreign_lines_are_skipped(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.jsonl")
    store.append(_record(1))
    with store.path.open("a") as f:
        f.write('{"id": "id9", "time": "x"')  # a torn write (no newline, no closing brace)
        f.write("\n[1, 2]\n")
        f.write(json.dumps({"id": "id8"}) + "\n")  # missing required fields
    store.append(_record(3))
    assert [r.id for r in store.read()] == ["id1", "id3"]


def test_missing_file_reads_empty(tmp_path: Path) -> None:
    assert read_history(path=tmp_path / "none.jsonl") == []
