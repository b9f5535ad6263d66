"""Replay every launch real SGLang resolved (tests/data/resolution/*.jsonl) through resolve(): 100 % agreement.

The records were produced by running each release's own argparse parser and resolution code on a CPU
machine (see tests/data/resolution/README.md); nothing in them was written by hand or by spectui.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spectui.core.launch.resolve import resolve

DATA = Path(__file__).resolve().parents[1] / "data" / "resolution"
MODEL = {"llama": ("m", "LlamaForCausalLM"), "deepseek_v3": ("ds", "DeepseekV3ForCausalLM")}
VERSIONS = ["0.5.2", "0.5.4.post3", "0.5.6.post2", "0.5.10", "0.5.23"]


def _records(version: str) -> list[dict]:
    with open(DATA / f"sglang-{version}.jsonl") as fh:
        return [json.loads(line) for line in fh]


def _models_match_names() -> None:
    # The argv in the records omits `--model-path <dir> --device cpu`; the dirs are models/m and models/ds.
    for name, (path, arch) in MODEL.items():
        config = json.loads((DATA / "models" / path / "config.json").read_text())
        assert config["architectures"] == [arch], name


def _expected(rec: dict) -> dict:
    outcome, message = rec["outcome"], rec.get("error_message")
    if isinstance(message, list):  # argparse: the last line it printed, "<prog>: error: <text>"
        message = message[-1].split(": error: ", 1)[1]
    if outcome == "error" and rec["error_type"] == "ArgumentError":
        # The 0.5.2 recorder called argparse with exit_on_error=False, so an invalid choice surfaced as
        # the ArgumentError argparse raises internally; on a console it is argparse's exit-2 error line.
        outcome = "argparse_error"
    exp: dict = {"outcome": outcome, "warnings": rec["warnings"]}
    if outcome == "argparse_error":
        exp["argparse_error"] = message
    elif outcome == "error":
        exp["error"] = (rec["error_type"], message, rec["raised_at"])
    else:
        exp["effective"] = rec["effective"]
    return exp


def _got(rec: dict, version: str, index: int) -> dict:
    path, arch = MODEL[rec["model"]]
    # The 0.5.23 recorder ran with SGLANG_USE_CUDA_IPC_TRANSPORT set: every successful launch logs its
    # deprecation at the end, except the very first one recorded (index 0), so that one ran without it.
    env = {"SGLANG_USE_CUDA_IPC_TRANSPORT": "1"} if index > 0 else {}
    res = resolve(["--model-path", path, "--device", "cpu", *rec["argv"]], version, model_arch=arch,
                  device="cpu", env=env)
    got: dict = {"outcome": res.outcome, "warnings": res.warnings}
    if res.outcome == "argparse_error":
        got["argparse_error"] = res.argparse_error
    elif res.outcome == "error":
        assert res.error is not None
        got["error"] = (res.error.type, res.error.message, res.error.raised_at)
    else:
        # `effective` in the records is the ServerArgs object after resolution; 0.5.15+ resolves into a
        # separate config and leaves those fields as parsed (Resolution.server_args models exactly that).
        assert res.server_args is not None
        got["effective"] = {k: res.server_args.get(k) for k in rec.get("effective", {})}
    return got


@pytest.mark.parametrize("version", VERSIONS)
def test_every_recorded_launch_matches(version: str) -> None:
    _models_match_names()
    records = _records(version)
    assert len(records) > 800
    mismatches = []
    for i, rec in enumerate(records):
        exp, got = _expected(rec), _got(rec, version, i)
        if exp != got:
            mismatches.append((rec["model"], rec["argv"], exp, got))
    assert not mismatches, f"{len(mismatches)} of {len(records)} differ; first: {mismatches[:3]}"


def test_replay_covers_every_outcome_kind() -> None:
    # Guard against a silently shrunk data set: each release has all three outcomes.
    for version in VERSIONS:
        kinds = {_expected(r)["outcome"] for r in _records(version)}
        assert kinds == {"ok", "error", "argparse_error"}, version


def test_0523_resolved_values_differ_from_server_args_fields() -> None:
    # REFERENCE §2.1 (run on 0.5.23): topk 1, steps 3, draft 8 resolves to draft tokens 4, while the
    # ServerArgs field stays 8 (as in the records).
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "d", "--speculative-eagle-topk", "1", "--speculative-num-steps", "3",
                   "--speculative-num-draft-tokens", "8"], "0.5.23", model_arch="LlamaForCausalLM")
    assert res.effective is not None and res.server_args is not None
    assert res.effective["speculative_num_draft_tokens"] == 4
    assert res.server_args["speculative_num_draft_tokens"] == 8
    assert res.effective["max_running_requests"] == 48
