"""`spectui inspect` on local paths, as a user runs it: exit codes, the --json contract, human output, bad input."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from draftckpt import draft_config, eagle3_tensors, write_ckpt, write_target

from spectui.cli import main

FINDING_KEYS = {"category", "severity", "title", "evidence", "fix"}
CATEGORIES = {"draft-architecture", "draft-format", "draft-algorithm", "draft-weights", "draft-hidden-size",
              "draft-vocab-map", "draft-aux-layers", "draft-context-length", "draft-config", "draft-missing"}


def launch(target: Path, draft: Path | str, algorithm: str = "EAGLE3", steps: int = 3) -> str:
    return (f"python -m sglang.launch_server --model-path {target} --speculative-algorithm {algorithm} "
            f"--speculative-draft-model-path {draft} --speculative-num-steps {steps} --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {steps + 1}")


def pair(tmp: Path, cfg: dict | None = None, tensors: dict | None = None, **target: object) -> tuple[Path, Path]:
    t = write_target(tmp / "target", **target)
    d = write_ckpt(tmp / "draft", draft_config() if cfg is None else cfg,
                   eagle3_tensors() if tensors is None else tensors)
    return t, d


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["inspect", *argv, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out)


def check_shape(doc: dict) -> None:
    assert {"draft", "target", "findings"} <= set(doc)
    for f in doc["findings"]:
        assert set(f) >= FINDING_KEYS and f["category"] in CATEGORIES
        assert f["severity"] in ("error", "warning", "info") and isinstance(f["evidence"], list)


def test_healthy_draft_exits_0_with_the_contract_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, d = pair(tmp_path)
    code, doc = run_json(capsys, "--launch", launch(t, d), "--sglang-version", "0.5.6")
    assert code == 0, doc["findings"]
    check_shape(doc)
    dr = doc["draft"]
    assert (dr["path"], dr["format"], dr["architectures"]) == (str(d), "sglang-eagle3", ["LlamaForCausalLMEagle3"])
    assert (dr["hidden_size"], dr["num_layers"], dr["vocab_size"], dr["draft_vocab_size"]) == (64, 1, 512, 128)
    assert dr["aux_layer_ids"] == [1, 3, 4] and 0 < dr["bytes_read"] < 10_000
    assert doc["target"]["num_layers"] == 8 and doc["target"]["architectures"] == ["LlamaForCausalLM"]
    assert doc["launch"]["algorithm"] == "EAGLE3" and doc["launch"]["steps"] == 3
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
    # the same by --draft/--model alone, and in human form
    assert main(["inspect", "--draft", str(d), "--model", str(t)]) == 0
    out = capsys.readouterr().out
    assert "sglang-eagle3" in out and "LlamaForCausalLM" in out


def test_eagle3_draft_under_eagle_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, d = pair(tmp_path)
    code, doc = run_json(capsys, "--launch", launch(t, d, "EAGLE"))
    assert code == 1
    check_shape(doc)
    f = next(f for f in doc["findings"] if f["code"] == "alg-eagle3-draft-as-eagle")
    assert (f["category"], f["severity"]) == ("draft-algorithm", "error")
    assert f["fix"] == "launch with --speculative-algorithm EAGLE3"
    assert main(["inspect", "--launch", launch(t, d, "EAGLE")]) == 1
    out = capsys.readouterr().out
    assert "ERROR" in out and "draft-algorithm" in out and "fix: launch with --speculative-algorithm EAGLE3" in out


def test_hidden_state_layers_beyond_the_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, d = pair(tmp_path, draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 3, 7]}))
    code, doc = run_json(capsys, "--draft", str(d), "--model", str(t))
    assert code == 1
    f = next(f for f in doc["findings"] if f["code"] == "aux-out-of-range")
    assert f["category"] == "draft-aux-layers" and "target config.json num_hidden_layers = 8" in f["evidence"]


def test_target_wider_than_the_draft(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, d = pair(tmp_path, tensors=eagle3_tensors(fc_in=288), hidden_size=96)
    code, doc = run_json(capsys, "--draft", str(d), "--model", str(t))
    assert code == 1
    assert "hidden-target-mismatch" in {f["code"] for f in doc["findings"] if f["severity"] == "error"}


def test_bad_checkpoints_are_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, "--draft", str(tmp_path / "nowhere"))
    assert code == 1 and doc["findings"][0]["code"] == "draft-path-missing"
    (tmp_path / "empty").mkdir()
    code, doc = run_json(capsys, "--draft", str(tmp_path / "empty"))
    assert code == 1 and doc["findings"][0]["code"] == "draft-config-unreadable"
    assert "config.json" in doc["findings"][0]["title"] + " ".join(doc["findings"][0]["evidence"])
    cut = write_ckpt(tmp_path / "cut", draft_config(), None)
    header = json.dumps({"fc.weight": {"dtype": "F16", "shape": [64, 192], "data_offsets": [0, 24576]}}).encode()
    (cut / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header[:40])
    code, doc = run_json(capsys, "--draft", str(cut))
    assert code == 1
    f = next(f for f in doc["findings"] if f["code"] == "weights-header")
    assert "the file is only 48 bytes" in f["title"]


@pytest.mark.parametrize(("argv", "says"), [
    ([], "give --draft PATH"),
    (["--launch", "python -m sglang.launch_server --model-path 'unclosed"], "--launch"),
    (["./some.log"], "not a file"),
    (["bad host name!"], "cannot read target"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and err.startswith("spectui inspect: ")


def test_as_a_process(tmp_path: Path) -> None:
    t, d = pair(tmp_path)
    res = subprocess.run([sys.executable, "-m", "spectui", "inspect", "--launch", launch(t, d, "EAGLE"), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and res.stderr == ""
    assert json.loads(res.stdout)["findings"][0]["category"] == "draft-algorithm"
