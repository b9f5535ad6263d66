"""`spectui advise`: the contract's JSON from --observed, speeds only where a cost is known, 'turn it off'
when every depth is slower, observations from a sweep journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spectui.cli import main
from spectui.core.specdec import Observed, advise


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["advise", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_matches_the_contract_and_uses_observed(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "--observed", "1:1.81", "--observed", "3:2.80", "--max-steps", "8")
    assert list(out)[:4] == ["model", "predicted", "recommend", "next_to_measure"]  # then #23's additions
    assert out["baseline"] == {"source": "modelled", "tokens_per_s": None, "cost": "prior"}
    assert set(out["model"]) == {"a1", "r", "observations", "prior"}
    assert out["model"]["observations"] == [[1, 1.81], [3, 2.8]] and out["model"]["prior"] is False
    assert [p["steps"] for p in out["predicted"]] == list(range(1, 9))
    assert all(set(p) == {"steps", "accept_len", "low", "high", "speedup"} for p in out["predicted"])  # no cost
    assert set(out["recommend"]) == {"steps", "topk", "num_draft_tokens", "why"}
    assert set(out["next_to_measure"]) == {"steps"}
    assert out == advise([Observed(1, 1.81), Observed(3, 2.80)], max_steps=8).to_json()


def test_speeds_appear_with_a_cost_and_slower_everywhere_says_off(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "--observed", "1:1.6:56.8", "--observed", "15:1.9:46.7", "--baseline-tps", "90")
    assert all("tokens_per_s" in p for p in out["predicted"])
    assert out["recommend"]["steps"] == 0 and "slower than no speculation" in out["recommend"]["why"]
    human_rc = main(["advise", "--observed", "1:1.6:56.8", "--observed", "15:1.9:46.7", "--baseline-tps", "90"])
    text = capsys.readouterr().out
    assert human_rc == 0 and "turn speculation off" in text and "accept len" in text


def test_observations_from_a_sweep_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def bench(steps: int, length: float, tps: float) -> dict:
        return {"server": {"speculative": {"speculative_num_steps": steps, "speculative_eagle_topk": 1}},
                "spec": {"accept_len": length}, "per_request_tokens_per_s": {"mean": tps},
                "workload": {"concurrency": 4}, "baseline": None}

    journal = tmp_path / "sweep.jsonl"
    lines = [{"type": "sweep", "format": 1, "grid": [], "original": {}},
             {"type": "config", "index": 0, "status": "ok", "bench": bench(1, 1.8, 70.0)},
             {"type": "config", "index": 1, "status": "ok", "bench": bench(3, 2.7, 95.0)},
             {"type": "config", "index": 2, "status": "failed", "bench": None}]
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = run_json(capsys, "--sweep", str(journal))
    assert out["model"]["observations"] == [[1, 1.8], [3, 2.7]]
    assert all("tokens_per_s" in p for p in out["predicted"])  # round times measured at two depths


def test_bad_observed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--observed", "three"]) == 2
    assert "STEPS:ACCEPT_LEN" in capsys.readouterr().err
    assert main(["advise"]) == 2
