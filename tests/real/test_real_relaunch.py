"""What acts on a real server, as a user runs it: `relaunch` with an edit and back (history kept), an edit the
real server refuses at start-up (verdict ok, the real warm-up fails) rolled back to the original healthy,
`bench --baseline` (no speculation measured, then the speculative command back), and `sweep` over NGRAM's own
knobs with the best picked and the original restored. One server, relaunched in turn (its pid changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from realkit import RealServer, drafts_ready, get


def spectui(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def only_pid(srv: RealServer) -> int:
    pids = srv.main_pids()
    assert len(pids) == 1, pids
    return pids[0]


def info(srv: RealServer) -> dict:
    status, body = get(srv.port, "/server_info", timeout=10)
    assert status == 200, status
    return json.loads(body)


def ensure_up(srv: RealServer) -> None:
    """Each test starts from the original server: one an earlier test left dead is started again by hand."""
    if get(srv.port, "/health", timeout=5)[0] == 200 and len(srv.main_pids()) == 1:
        return
    srv.stop()
    srv.start()
    srv.wait_healthy()


@pytest.fixture(scope="module")
def srv(kit_server: RealServer) -> RealServer:
    return kit_server


def test_relaunch_with_an_edit_and_back(srv: RealServer, real_state: Path) -> None:
    ensure_up(srv)
    first = only_pid(srv)
    out = spectui("relaunch", "local", "--pid", str(first), "--set", "speculative-num-draft-tokens=2", "--yes",
                  "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res["healthy"] is True and res["old_pid"] == first and res["new_pid"] != first
    assert info(srv)["speculative_num_draft_tokens"] == 2  # what the real server runs now
    assert Path(res["log"]).parent == srv.root and Path(res["log"]).exists()
    back = spectui("relaunch", "local", "--pid", str(only_pid(srv)), "--set", "speculative-num-draft-tokens=4",
                   "--yes", "--json")
    assert back.returncode == 0, back.stdout[-2000:] + back.stderr[-2000:]
    assert info(srv)["speculative_num_draft_tokens"] == 4
    from spectui.ops.history import HistoryStore

    launches = HistoryStore().read()
    assert len(launches) >= 2, launches  # both relaunches are in the history


def test_an_edit_refused_at_start_up_is_rolled_back(srv: RealServer, tmp_path: Path) -> None:
    """An EAGLE-3 draft whose config.json lacks draft_vocab_size: SGLang's own resolution accepts the flags
    (the verdict says it starts), then the draft fails to load (`AttributeError: 'LlamaConfig' object has no
    attribute 'draft_vocab_size'`) and the real server exits during start-up."""
    ensure_up(srv)
    draft = tmp_path / "draft3-novocab"
    draft.mkdir()
    for f in (drafts_ready() / "draft-eagle3").iterdir():
        (draft / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((draft / "config.json").read_text())
    cfg.pop("draft_vocab_size", None)
    (draft / "config.json").write_text(json.dumps(cfg))
    before = only_pid(srv)
    out = spectui("relaunch", "local", "--pid", str(before), "--set", "speculative-algorithm=EAGLE3",
                  "--set", f"speculative-draft-model-path={draft}", "--set", "speculative-num-steps=3",
                  "--set", "speculative-eagle-topk=1", "--yes", "--json")
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res["rolled_back"] is True and res["healthy"] is False, res
    now = only_pid(srv)
    assert now != before and get(srv.port, "/health")[0] == 200  # the original command, started again
    assert info(srv)["speculative_algorithm"] == "NGRAM"
    failed = [p for p in srv.root.glob("server-*.log") if "draft_vocab_size" in p.read_text(errors="replace")]
    assert failed, "the failed launch's own log should hold the real error"


def test_bench_baseline_measures_without_speculation_and_restores(srv: RealServer) -> None:
    ensure_up(srv)
    pid = only_pid(srv)
    out = spectui("bench", "local", "--pid", str(pid), "--baseline", "--yes", "--requests", "4",
                  "--concurrency", "1", "--max-tokens", "32", "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res["baseline"]["source"] == "measured" and res["baseline"]["output_tokens_per_s"] > 0
    assert res["speedup"] is not None
    assert get(srv.port, "/health")[0] == 200 and info(srv)["speculative_algorithm"] == "NGRAM"
    assert only_pid(srv) != pid  # measured pid stopped for the baseline, the speculative command back


def test_sweep_over_ngram_knobs_restores_the_original(srv: RealServer) -> None:
    ensure_up(srv)
    pid = only_pid(srv)
    original = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    out = spectui("sweep", "local", "--pid", str(pid), "--grid", "speculative-num-draft-tokens=2,4",
                  "--grid", "speculative-ngram-max-bfs-breadth=10", "--requests", "3", "--concurrency", "1",
                  "--max-tokens", "24", "--yes", "--json", timeout=1500)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    res = json.loads(out.stdout)
    ok = [c for c in res["configs"] if c["status"] == "ok"]
    assert len(ok) == 2, res["configs"]
    assert {c["effective"]["speculative_num_draft_tokens"] for c in ok} == {2, 4}
    assert res["best"] is not None and res["applied"] == "original"
    assert res["restore"]["healthy"] is True
    now = only_pid(srv)
    assert Path(f"/proc/{now}/cmdline").read_bytes().split(b"\0") == original  # the same command line
    assert info(srv)["speculative_num_draft_tokens"] == 4
