"""resolve() beyond the recorded CPU runs: the seed incident, GPU-only branches, versions in between.

Expected values come from /work/docs/REFERENCE.md §2 (SGLang source read per release, some
"run" on CPU) and the seed write-up, not from the code under test.
"""

from __future__ import annotations

import pytest

from spectui.core.launch import resolution as R
from spectui.core.launch import resolve

LLAMA = "LlamaForCausalLM"
DSV3 = "DeepseekV3ForCausalLM"
SEED_BASE = ["--model-path", "/shared/kimi-k2.5-int4", "--trust-remote-code", "--tp-size", "8",
             "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/data/eagle3/4"]
SEED_VERSIONS = ["0.5.2", "0.5.4.post3", "0.5.6.post2", "0.5.10", "0.5.23"]


@pytest.mark.parametrize("version", SEED_VERSIONS)
def test_seed_launch_1_vllm_flag_name(version: str) -> None:
    res = resolve([*SEED_BASE, "--num-speculative-tokens", "16"], version, model_arch=DSV3)
    assert res.outcome == "argparse_error"
    assert res.argparse_error == "unrecognized arguments: --num-speculative-tokens 16"
    note = res.notes[0]
    assert "did you mean --speculative-num-steps" in note.title
    assert ("--speculative-num-steps", "16") in note.fix_set and note.fix_unset == ("--num-speculative-tokens",)


@pytest.mark.parametrize("version", SEED_VERSIONS)
def test_seed_launch_2_bare_assertion(version: str) -> None:
    res = resolve([*SEED_BASE, "--speculative-num-draft-tokens", "16", "--speculative-eagle-topk", "1"], version,
                  model_arch=DSV3)
    assert res.outcome == "error" and res.error is not None
    assert (res.error.type, res.error.message) == ("AssertionError", "")
    assert "add --speculative-num-steps" in res.error.explanation
    assert "--speculative-num-steps 15" in res.error.explanation  # a chain of 16 draft tokens


@pytest.mark.parametrize("version", SEED_VERSIONS)
def test_seed_launch_3_draft_tokens_16_become_2(version: str) -> None:
    res = resolve([*SEED_BASE, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
                   "--speculative-num-steps", "1"], version, model_arch=DSV3)
    assert res.outcome == "ok" and res.effective is not None
    assert res.requested["speculative_num_draft_tokens"] == 16
    assert res.effective["speculative_num_draft_tokens"] == 2
    assert R.ADJUST in res.warnings
    adjusted = [n for n in res.notes if n.code == "draft-tokens-adjusted"]
    assert adjusted and adjusted[0].title == "--speculative-num-draft-tokens 16 becomes 2"
    assert ("--speculative-num-steps", "15") in adjusted[0].fix_set


def test_seed_fix_resolves_clean() -> None:
    res = resolve([*SEED_BASE, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
                   "--speculative-num-steps", "15"], "0.5.6.post2", model_arch=DSV3)
    assert res.outcome == "ok" and R.ADJUST not in res.warnings
    assert res.effective is not None and res.effective["speculative_num_draft_tokens"] == 16


def test_typeerror_steps_without_topk() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"],
                  "0.5.6.post2", model_arch=LLAMA)
    assert res.error is not None and res.error.type == "TypeError"
    assert res.error.message == "'>' not supported between instances of 'NoneType' and 'int'"
    assert "--speculative-eagle-topk 1" in res.error.explanation


@pytest.mark.parametrize("version, arch, expected", [
    ("0.5.6.post2", LLAMA, (5, 4, 8)), ("0.5.6.post2", "Qwen2ForCausalLM", (5, 4, 8)),
    ("0.5.6.post2", DSV3, (3, 1, 4)), ("0.5.10", "Qwen2ForCausalLM", (3, 1, 4)), ("0.5.10", LLAMA, (5, 4, 8)),
    ("0.5.23", "Qwen3ForCausalLM", (3, 1, 4)), ("0.4.10.post2", DSV3, (3, 1, 4)),
    ("0.4.10.post2", "Qwen2ForCausalLM", (5, 4, 8)),
])
def test_auto_defaults_by_target_architecture(version: str, arch: str, expected: tuple[int, int, int]) -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "d"], version, model_arch=arch)
    assert res.effective is not None
    got = tuple(res.effective[k] for k in ("speculative_num_steps", "speculative_eagle_topk",
                                          "speculative_num_draft_tokens"))
    assert got == expected


def test_unknown_architecture_is_said() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "d"], "0.5.10")
    assert any("target architecture unknown" in a and "(5, 4, 8)" in a for a in res.assumptions)


def test_standalone_auto_is_chain() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path",
                   "d"], "0.5.6.post2", model_arch=LLAMA)
    assert res.effective is not None and res.effective["speculative_num_steps"] == 3


def test_ngram_on_gpu_overrides_topk() -> None:
    # docs/REFERENCE.md §2.4 NGRAM: topk := max_bfs_breadth (10), draft tokens := 12 when unset.
    res = resolve(["--model-path", "m", "--speculative-algorithm", "NGRAM", "--speculative-eagle-topk", "1"],
                  "0.5.6.post2", model_arch=LLAMA)
    assert res.outcome == "ok" and res.effective is not None
    assert res.effective["speculative_eagle_topk"] == 10
    assert res.effective["speculative_num_draft_tokens"] == 12
    assert res.warnings == [R.MR48, R.NGRAM_OVERLAP_MIXED]
    assert any(n.code == "ngram-topk-overridden" for n in res.notes)
    res10 = resolve(["--model-path", "m", "--speculative-algorithm", "NGRAM"], "0.5.10", model_arch=LLAMA)
    assert R.NGRAM_DRAFT_DEFAULT.format(n=12) in res10.warnings


def test_ngram_on_cpu_fails_before_0518() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "NGRAM"], "0.5.6.post2", device="cpu")
    assert res.error is not None and res.error.message == "Ngram speculative decoding only supports CUDA device."


def test_algorithm_names_case_and_unknown_from_0512() -> None:
    ok = resolve(["--model-path", "m", "--speculative-algorithm", "eagle3", "--speculative-draft-model-path", "d"],
                 "0.5.23", model_arch=LLAMA)
    assert ok.effective is not None and ok.effective["speculative_algorithm"] == "EAGLE3"
    bad = resolve(["--model-path", "m", "--speculative-algorithm", "MTP"], "0.5.23", model_arch=LLAMA)
    assert bad.error is not None and (bad.error.type, bad.error.message) == (
        "ValueError", "Unknown speculative algorithm name: MTP")
    old = resolve(["--model-path", "m", "--speculative-algorithm", "eagle3"], "0.5.10")
    assert old.outcome == "argparse_error" and "invalid choice: 'eagle3'" in (old.argparse_error or "")
    assert old.notes[0].fix_set == (("--speculative-algorithm", "EAGLE3"),)


def test_spec_v2_env_0510() -> None:
    base = ["--model-path", "m", "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "d",
            "--speculative-num-steps", "3"]
    on = resolve([*base, "--speculative-eagle-topk", "1"], "0.5.10", model_arch=LLAMA,
                 env={"SGLANG_ENABLE_SPEC_V2": "1"})
    assert on.effective is not None and on.effective["disable_overlap_schedule"] is False
    assert R.SPEC_V2_ON in on.warnings
    tree = resolve([*base, "--speculative-eagle-topk", "4"], "0.5.10", model_arch=LLAMA,
                   env={"SGLANG_ENABLE_SPEC_V2": "1"})
    assert tree.error is not None and tree.error.message == R.SPEC_V2_TOPK


@pytest.mark.parametrize("version, backend, fails", [
    ("0.5.4.post3", "fa3", True), ("0.5.6.post2", "fa3", False), ("0.5.6.post2", "triton", True),
    ("0.5.23", "triton", False), ("0.5.23", "flashinfer", False), ("0.5.23", "torch_native", True),
])
def test_page_size_with_tree_depends_on_backend(version: str, backend: str, fails: bool) -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
                   "--speculative-num-steps", "3", "--speculative-eagle-topk", "4",
                   "--speculative-num-draft-tokens", "8", "--page-size", "16", "--attention-backend", backend],
                  version, model_arch=LLAMA)
    assert (res.outcome == "error") == fails


def test_page_size_with_tree_on_unknown_gpu_backend_is_an_assumption() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
                   "--speculative-num-steps", "3", "--speculative-eagle-topk", "4", "--page-size", "16"],
                  "0.5.6.post2", model_arch=LLAMA)
    assert res.outcome == "ok" and any("attention backend" in a for a in res.assumptions)


def test_standalone_with_dp_attention() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path",
                   "d", "--enable-dp-attention", "--dp-size", "2"], "0.5.6.post2", model_arch=LLAMA)
    assert res.error is not None and res.error.message == R.STANDALONE_DP


def test_max_running_given_is_kept() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
                   "--max-running-requests", "128"], "0.5.6.post2", model_arch=LLAMA)
    assert res.effective is not None and res.effective["max_running_requests"] == 128
    assert R.MR48 not in res.warnings


def test_0410_rules() -> None:
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "d",
                   "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"], "0.4.10.post2", model_arch=LLAMA)
    assert res.warnings == [R.OVERLAP_EAGLE, R.ADJUST]  # 48 is silent before 0.5.4
    assert res.effective is not None and res.effective["max_running_requests"] == 48


def test_version_not_shipped_uses_nearest_catalogue_and_its_own_rules() -> None:
    # 0.5.8.post3 (no such build shipped): catalogue of 0.5.8.post1 (same line); 0.5.8's rules: "anything
    # else" targets already get (3, 1, 4).
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                   "d"], "0.5.8.post3", model_arch="Qwen2ForCausalLM")
    assert res.catalogue_version == "0.5.8.post1"
    assert res.catalogue is not None and not res.catalogue.exact and "0.5.8.post1" in res.catalogue.why
    assert any("0.5.8.post1" in a for a in res.assumptions)
    assert res.effective is not None and res.effective["speculative_num_steps"] == 3
    assert R.SPEC_V2_OFF in res.warnings


def test_unknown_version_raises() -> None:
    with pytest.raises(ValueError, match="known: "):
        resolve(["--model-path", "m"], "not-a-version")


def test_no_speculation_is_plain_ok() -> None:
    res = resolve(["--model-path", "m", "--tp", "2"], "0.5.23")
    assert res.outcome == "ok" and res.warnings == [] and res.notes == []


def test_sglang_serve_positional_model_from_0518() -> None:
    res = resolve(["/models/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d"],
                  "0.5.23", model_arch=LLAMA)
    assert res.outcome == "ok" and res.requested["model_path"] == "/models/llama"
    old = resolve(["/models/llama", "--tp", "2"], "0.5.10")
    assert old.outcome == "argparse_error"


def test_sglang_serve_needs_literal_model_path_before_0511() -> None:
    # docs/REFERENCE.md §1.4: 0.5.5-0.5.10 `sglang serve` raises this before argparse when --model-path is absent.
    res = resolve(["--model", "/m", "--tp", "2"], "0.5.10", entry="sglang")
    assert res.error is not None and (res.error.type, res.error.message) == (
        "Exception", "Error: --model-path is required. Please provide the path to the model.")
    assert resolve(["--model", "/m"], "0.5.10").outcome == "ok"  # python -m sglang.launch_server
    assert resolve(["--model", "/m"], "0.5.23", entry="sglang").outcome == "ok"


def test_help_and_config_file() -> None:
    assert resolve(["-h"], "0.5.6.post2").help_requested
    res = resolve(["--model-path", "m", "--config", "serve.yaml"], "0.5.6.post2")
    assert any("--config serve.yaml" in a for a in res.assumptions)
