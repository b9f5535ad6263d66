"""bench.jsonl's one reader (ops.bench.history) and the consumers that read through it."""

from __future__ import annotations

import json
from pathlib import Path

from spectui.ops.bench.baseline import known_baseline
from spectui.ops.bench.history import bench_history_path, bench_records
from spectui.ops.bench.run import history_baseline
from spectui.ops.sweep.plan import bench_seconds

WORKLOAD = {"requests": 8, "concurrency": 4, "max_tokens": 64, "dataset": "random"}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    history = tmp_path / "history.jsonl"
    (tmp_path / "bench.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return history


def _line(host: str, rid: str, tps: float, *, spec: dict | None = None, model: str = "/m", **res: object) -> str:
    result = {"output_tokens_per_s": tps, "workload": WORKLOAD, "server": {"speculative": spec}, **res}
    return json.dumps({"id": rid, "host": host, "model": model, "result": result})


def test_the_file_sits_beside_the_launch_history(tmp_path: Path) -> None:
    assert bench_history_path(tmp_path / "history.jsonl") == tmp_path / "bench.jsonl"


def test_records_skip_what_is_not_a_record_and_keep_the_order(tmp_path: Path) -> None:
    history = _write(tmp_path, [_line("a", "1", 10.0), "{broken", "[1, 2]", json.dumps({"host": "a", "result": 5}),
                                _line("b", "2", 20.0), "", _line("a", "3", 30.0)])
    assert [r["id"] for r in bench_records(history)] == ["1", "2", "3"]
    assert [r["id"] for r in bench_records(history, host="a")] == ["1", "3"]
    assert bench_records(tmp_path / "nowhere" / "history.jsonl") == []


def test_consumers_read_the_same_records(tmp_path: Path) -> None:
    history = _write(tmp_path, [
        _line("a", "old", 10.0, duration_s=12.5),
        _line("a", "spec", 99.0, spec={"algorithm": "EAGLE"}, duration_s=3.0),
        _line("b", "other-host", 50.0, duration_s=7.0),
        "not json",
    ])
    base = history_baseline("a", "/m", WORKLOAD, history)
    assert base is not None and base["history_id"] == "old" and base["output_tokens_per_s"] == 10.0
    assert history_baseline("a", "/other-model", WORKLOAD, history) is None
    known = known_baseline("a", "/m", history)
    assert known is not None and float(known) == 10.0 and known.running == 4
    assert bench_seconds(WORKLOAD, "a", history) == 3.0  # the last bench of the workload, speculative or not
    assert bench_seconds(WORKLOAD, "b", history) == 7.0
