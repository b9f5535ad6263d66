"""Replay every launch real SGLang resolved (tests/data/resolution/*.jsonl) through resolve(): 100 % agreement.

The records were produced by running each release's own argparse parser and resolution code on a CPU
machine (see tests/data/resolution/README.md); nothing in them was written by hand or by spectui.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spectui.core.launch import resolve

DATA = Path(__file__).resolve().parents[1] / "data" / "resolution"
MODEL = {"llama": ("m", "LlamaForCausalLM"), "deepseek_v3": ("ds", "DeepseekV3ForCausalLM")}
VERSIONS = ["0.5.2", "0.5.4.post3", "0.5.6.post2", "0.5.10", "0.5.12", "0.5.15", "0.5.19", "0.5.23"]


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
        exp["server_args"] = rec["server_args"]
    return exp


def _got(rec: dict, version: str) -> dict:
    path, arch = MODEL[rec["model"]]
    # Every launch ran in a fresh fork with the environment recorded beside it (`env`, {} in every file).
    res = resolve(["--model-path", path, "--device", "cpu", *rec["argv"]], version, model_arch=arch,
                  device="cpu", env=rec["env"])
    got: dict = {"outcome": res.outcome, "warnings": res.warnings}
    if res.outcome == "argparse_error":
        got["argparse_error"] = res.argparse_error
    elif res.outcome == "error":
        assert res.error is not None
        got["error"] = (res.error.type, res.error.message, res.error.raised_at)
    else:
        # `effective`: the resolved values; `server_args`: the ServerArgs object after resolution, which
        # 0.5.19+ leaves as parsed (resolution declares its values apart, resolution_result reads them).
        assert res.effective is not None and res.server_args is not None
        got["effective"] = {k: res.effective.get(k) for k in rec["effective"]}
        got["server_args"] = {k: res.server_args.get(k) for k in rec["server_args"]}
    return got


@pytest.mark.parametrize("version", VERSIONS)
def test_every_recorded_launch_matches(version: str) -> None:
    _models_match_names()
    records = _records(version)
    assert len(records) > 800
    mismatches = []
    for rec in records:
        exp, got = _expected(rec), _got(rec, version)
        if exp != got:
            mismatches.append((rec["model"], rec["argv"], exp, got))
    assert not mismatches, f"{len(mismatches)} of {len(records)} differ; first: {mismatches[:3]}"


def test_replay_covers_every_outcome_kind() -> None:
    # Guard against a silently shrunk data set: each release has all three outcomes.
    for version in VERSIONS:
        kinds = {_expected(r)["outcome"] for r in _records(version)}
        assert kinds == {"ok", "error", "argparse_error"}, version


def test_0523_resolved_values_differ_from_server_args_fields() -> None:
    # docs/REFERENCE.md §2.1 (run on 0.5.23): topk 1, steps 3, draft 8 resolves to draft tokens 4, while the
    # ServerArgs field stays 8 (as in the records).
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "d", "--speculative-eagle-topk", "1", "--speculative-num-steps", "3",
                   "--speculative-num-draft-tokens", "8"], "0.5.23", model_arch="LlamaForCausalLM")
    assert res.effective is not None and res.server_args is not None
    assert res.effective["speculative_num_draft_tokens"] == 4
    assert res.server_args["speculative_num_draft_tokens"] == 8
    assert res.effective["max_running_requests"] == 48


# --- one test per release boundary the resolver models (values as in the recorded files) -----------------
EAGLE3 = ["--model-path", "m", "--device", "cpu", "--speculative-algorithm", "EAGLE3",
          "--speculative-draft-model-path", "d", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
          "--speculative-num-draft-tokens", "8"]


def test_boundary_0519_resolves_apart_from_server_args() -> None:
    # <= 0.5.18 resolution writes ServerArgs itself (server_args == effective); 0.5.19's resolve_once leaves
    # the fields as parsed.
    old = resolve(EAGLE3, "0.5.15", model_arch="LlamaForCausalLM", device="cpu")
    new = resolve(EAGLE3, "0.5.19", model_arch="LlamaForCausalLM", device="cpu")
    assert old.server_args == old.effective and old.effective is not None
    assert old.effective["speculative_num_draft_tokens"] == 4
    assert new.effective is not None and new.server_args is not None
    assert new.effective["speculative_num_draft_tokens"] == 4 and new.server_args["speculative_num_draft_tokens"] == 8
    assert new.effective["max_running_requests"] == 48 and new.server_args["max_running_requests"] is None
    assert new.effective["page_size"] == 1 and new.server_args["page_size"] is None


def test_boundary_0519_cpu_forces_overlap_off() -> None:
    old = resolve(EAGLE3, "0.5.15", model_arch="LlamaForCausalLM", device="cpu")
    new = resolve(EAGLE3, "0.5.19", model_arch="LlamaForCausalLM", device="cpu")
    assert old.effective is not None and old.effective["disable_overlap_schedule"] is False
    assert "Overlap schedule is not implemented for speculative decoding on CPU." not in old.warnings
    assert new.effective is not None and new.effective["disable_overlap_schedule"] is True
    assert new.warnings[1:3] == ["Overlap schedule is not implemented for speculative decoding on CPU.",
                                 "Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative "
                                 "decoding."]


def test_boundary_0514_cuda_graph_max_bs_deprecated_alias() -> None:
    note = ("\x1b[1;33m'--cuda-graph-max-bs' is deprecated and will be removed in a future release. "
            "Use '--cuda-graph-max-bs-decode' instead.\x1b[0m")
    for version, warned in (("0.5.13.post1", False), ("0.5.14", True), ("0.5.19", True)):
        res = resolve(["--model-path", "m", "--cuda-graph-max-bs", "16"], version)
        assert res.outcome == "ok", version
        assert (note in res.warnings) == warned, version
        assert res.requested.get("cuda_graph_max_bs_decode" if warned else "cuda_graph_max_bs") == 16
    assert resolve(["--model-path", "m", "--cuda-graph-max-bs", "16"], "0.5.20").outcome == "argparse_error"


def test_boundary_ngram_given_steps_are_kept() -> None:
    # 0.5.19 / 0.5.23 derive steps = draft tokens // topk only when steps are not given.
    base = ["--model-path", "m", "--device", "cpu", "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "2"]
    for version in ("0.5.19", "0.5.23"):
        derived = resolve(base, version, device="cpu")
        kept = resolve([*base, "--speculative-num-steps", "3"], version, device="cpu")
        assert derived.effective is not None and derived.effective["speculative_num_steps"] == 0
        assert kept.effective is not None and kept.effective["speculative_num_steps"] == 3
