"""The inspector's findings as rule evidence: `spectui check LOG --launch CMD [--inspect]` gives ONE diagnosis
(DRAFT001, DRAFT002) joining the log's accept length with what the draft checkpoint says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from draftckpt import DROP, draft_config, eagle3_tensors, write_ckpt, write_target

from spectui.cli import main


def decode_log(path: Path, accepts: list[float]) -> Path:
    lines = ["[2025-12-03 09:59:59] The server is fired up and ready to roll!"]
    for i, a in enumerate(accepts):
        lines.append(f"[2025-12-03 10:00:{i:02d} TP0] Decode batch, #running-req: 1, #token: {100 + 40 * i}, "
                     f"token usage: 0.01, accept len: {a:.2f}, cuda graph: True, gen throughput (token/s): 40.00, "
                     "#queue-req: 0, ")
    path.write_text("\n".join(lines) + "\n")
    return path


def launch(t: Path, d: Path, algorithm: str, steps: int) -> str:
    return (f"python -m sglang.launch_server --model-path {t} --speculative-algorithm {algorithm} "
            f"--speculative-draft-model-path {d} --speculative-num-steps {steps} --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {steps + 1}")


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["check", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_accept_len_1_and_an_eagle3_draft_under_eagle_is_one_diagnosis(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    t = write_target(tmp_path / "target")
    d = write_ckpt(tmp_path / "draft", draft_config(), eagle3_tensors())
    log = decode_log(tmp_path / "server.log", [1.0] * 8)
    cmd = launch(t, d, "EAGLE", 3)
    for extra in (["--inspect"], []):  # --inspect, or by itself since the draft is a local folder
        code, doc = check(capsys, str(log), "--launch", cmd, *extra)
        assert code == 1
        diag = next(x for x in doc["diagnoses"] if x["rule"] == "DRAFT001")
        assert diag["severity"] == "error" and diag["fix"] == {"set": {"--speculative-algorithm": "EAGLE3"},
                                                               "unset": []}
        assert doc["diagnoses"][0]["rule"] == "DRAFT001"  # the root cause first
        assert any(e.startswith("draft checkpoint: ") for e in diag["evidence"])
        assert "config.json architectures = ['LlamaForCausalLMEagle3']" in diag["evidence"]
        assert "accept len 1.00" in " ".join(diag["evidence"]) or "1.00" in diag["message"]
    # Not inspected (no such local folder, no --inspect): no DRAFT rule, the generic one speaks.
    code, doc = check(capsys, str(log), "--launch", launch(t, tmp_path / "elsewhere", "EAGLE", 3))
    rules = {x["rule"] for x in doc["diagnoses"]}
    assert "DRAFT001" not in rules and "SPEC021" in rules


def test_seed_incident_accept_1_9_at_15_steps_and_undeclared_layers(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    t = write_target(tmp_path / "target")
    d = write_ckpt(tmp_path / "draft", draft_config(eagle_config=DROP), eagle3_tensors())
    log = decode_log(tmp_path / "server.log", [1.9, 1.88, 1.93, 1.9, 1.87, 1.91, 1.9])
    code, doc = check(capsys, str(log), "--launch", launch(t, d, "EAGLE3", 15), "--inspect")
    assert code == 1
    diag = next(x for x in doc["diagnoses"] if x["rule"] == "DRAFT002")
    assert diag["category"] == "hidden-state-mismatch"
    assert "at 15 steps" in diag["message"] and "eagle_aux_hidden_state_layer_ids" in diag["message"]
    # A well-accepted draft with the same checkpoint: nothing about its layers.
    good = decode_log(tmp_path / "good.log", [3.5, 3.6, 3.4, 3.5, 3.6])
    code, doc = check(capsys, str(good), "--launch", launch(t, d, "EAGLE3", 15), "--inspect")
    assert "DRAFT002" not in {x["rule"] for x in doc["diagnoses"]}


def test_inspect_without_launch_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = decode_log(tmp_path / "server.log", [1.0] * 3)
    assert main(["check", str(log), "--inspect"]) == 2
    assert "--inspect needs --launch" in capsys.readouterr().err
