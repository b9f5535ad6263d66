"""Write → read gives the same parts back (masked), the log is cut to its budget keeping the start-up line
and every traceback, and the replay iterators pace the log and the series."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from bundle_leaky import leaky_parts

from spectui.bundle import FORMAT_VERSION, BundleParts, BundleWriter, is_bundle, read_bundle, write_bundle
from spectui.bundle.logcut import cut_log


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "b.spectui.tar.gz"
    written = write_bundle(path, leaky_parts())
    assert is_bundle(path)
    with tarfile.open(path, "r:gz") as tar:
        assert tar.getnames()[0] == "manifest.json"
    b = read_bundle(path)
    m = b.manifest
    assert m.format_version == FORMAT_VERSION == 1 and m.sglang_version == "0.5.4"
    assert m.target == "gpu-box:/var/log/sglang.log" and m.spectui_version
    assert m.members == written.members and all(len(x.sha256) == 64 for x in m.members)
    assert (m.window.start, m.window.end) == (1748772000.0, 1748772010.0)
    assert b.effective == {"speculative_num_draft_tokens": 2, "speculative_eagle_topk": 1, "speculative_num_steps": 1}
    assert b.requested["speculative_num_draft_tokens"] == 16
    assert b.verdict["outcome"] == "ok"
    assert [s.t for s in b.server_info] == [1748772000.0, 1748772010.0]
    assert b.server_info[1].data == {"api_key": "***", "speculative_num_draft_tokens": 2}
    assert [s.name for s in b.metrics] == ["metrics/0000.prom", "metrics/0001.prom"]
    assert b.metrics[1].data == "sglang:gen_throughput 55.0\n"
    assert len(b.series) == 10 and b.series[0].gen_tokens_per_s == 55.0 and b.series[0].queue_req == 0
    assert b.diagnoses[0]["rule"] == "SPEC003"
    assert b.history["bench"][0]["speedup"]["output_tokens_per_s"] == 1.32
    assert b.inspect["draft"]["format"] == "sglang-eagle3"
    assert len(b.gpu) == 6 and b.launch["pid"] == 4242
    assert "Decode batch" in b.log_text() and not m.log["cut"]
    assert b.original_line(2) == 2


def test_optional_members_absent_and_incremental_writer(tmp_path: Path) -> None:
    path = tmp_path / "w.tar.gz"
    with BundleWriter(path, target="local", sglang_version="0.5.6") as w:
        w.set_log(b"no timestamps here\nsecond line\nthird\n")
        w.set_launch("python -m sglang.launch_server --model /m")
        w.set_config({"speculative_num_steps": 3})
        w.add_sample(100.0, accept_len=2.5, gen_tokens_per_s=80.0, running_req=2, queue_req=1)
        w.add_sample(104.0, accept_len=2.7, gen_tokens_per_s=82.0, running_req=2, queue_req=0)
    b = read_bundle(path)
    assert "inspect.json" not in b.names and "gpu.jsonl" not in b.names
    assert b.inspect is None and b.gpu == [] and b.server_info == []
    assert b.launch_command == "python -m sglang.launch_server --model /m"
    # no timestamps: even spacing over the recorded window (4 s over 3 lines), scaled by the speed
    assert [t for t, _ in b.log_replay(speed=2.0)] == [0.0, 4 / 3 / 2, 4 / 3]
    kinds = [(e.kind, e.t) for e in b.replay(speed=4.0)]
    assert ("sample", 1.0) in kinds and kinds[0] == ("line", 0.0)


def test_log_replay_uses_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    write_bundle(path, leaky_parts())
    events = list(read_bundle(path).log_replay(speed=10.0))
    assert events[0][0] == 0.0 and events[1][0] == 0.1
    offsets = [t for t, _ in events]
    assert offsets == sorted(offsets)
    tb = next(i for i, (_, line) in enumerate(events) if line.startswith('  File "/sgl/scheduler.py"'))
    assert events[tb][0] == events[tb - 1][0]  # un-timestamped traceback lines keep the previous time


def _big_log() -> bytes:
    old = [f"[2025-06-01 09:00:00] old launch line {i}" for i in range(50)]
    head = ["[2025-06-01 09:59:59] pre-start warning", "[2025-06-01 10:00:00] server_args=ServerArgs(tp_size=8)"]
    noise = [f"[2025-06-01 10:00:{i % 60:02d} TP0] Decode batch. #running-req: 1, filler {i:06d} " + "x" * 60
             for i in range(5000)]
    tb = ["[2025-06-01 10:30:00 TP3] Scheduler hit an exception: Traceback (most recent call last):",
          '  File "/sgl/a.py", line 1, in f', "    g()", "RuntimeError: CUDA error: an illegal memory access"]
    tail = [f"[2025-06-01 10:40:{i % 60:02d} TP0] tail line {i}" for i in range(200)]
    return ("\n".join(old + ["[2025-06-01 09:00:01] server_args=ServerArgs(tp_size=4)"] + head + noise[:2500]
                      + tb + noise[2500:] + tail) + "\n").encode()


def test_log_cut_keeps_server_args_and_tracebacks_and_marks_cuts(tmp_path: Path) -> None:
    data = _big_log()
    body, info = cut_log(data, 40_000)
    text = body.decode()
    assert "server_args=ServerArgs(tp_size=8)" in text and "tp_size=4" not in text  # the last launch only
    assert "pre-start warning" in text
    assert "RuntimeError: CUDA error: an illegal memory access" in text
    assert text.rstrip().endswith("tail line 199")
    assert "[spectui: cut lines 1-" in text and "before this launch" in text and "over the byte budget" in text
    assert info["cut"] and info["start"] == "launch" and len(body) < 40_000 * 1.2
    assert {p["why"] for p in info["protected"]} == {"server_args", "traceback"}
    path = tmp_path / "cut.tar.gz"
    write_bundle(path, BundleParts(log=data, log_budget=40_000))
    b = read_bundle(path)
    lines = b.log_lines()
    n = next(i for i, line in enumerate(lines, 1) if "illegal memory access" in line)
    orig = data.decode().splitlines()
    assert orig[b.original_line(n) - 1] == lines[n - 1]
    assert b.original_line(1) is None and b.is_cut_marker(lines[0])
    assert json.loads(b.member("manifest.json") or b"{}") == {}  # the manifest is not a member
    assert b.manifest.log["original_bytes"] == len(data)


def test_log_within_budget_is_whole_and_start_offset_is_honoured() -> None:
    data = b"a\nb\n[2025-06-01 10:00:00] server_args=x\nc\n"
    assert cut_log(data, 1000)[0] == data
    body, info = cut_log(data, 1000, start_offset=2)
    assert body.startswith(b"[spectui: cut lines 1-1") and body.endswith(b"b\n[2025-06-01 10:00:00] server_args=x\nc\n")
    assert info["start"] == "offset"
