"""resolve() on launch commands real users posted (tests/data/corpus headers), and what they taught it.

Expected values come from the real SGLang output in the corpus files (source URL beside each), from
/work/docs/REFERENCE.md §1.4/§2.4, or from SGLang's source as cited, not from the code under test.
"""

from __future__ import annotations

import pytest

from spectui.core.launch import resolve
from spectui.core.versions import parse_version

DSV4 = "DeepseekV4ForCausalLM"

# tests/data/corpus/048-dsv4-hook-rejects-nextn-assertion.log
# source: https://github.com/sgl-project/sglang/issues/38236 (sglang 0.5.19.dev410+gedff717ef):
#   File ".../sglang/srt/arg_groups/deepseek_v4_hook.py", line 150, in apply_deepseek_v4_defaults
#   AssertionError: Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM
LAUNCH_048 = ["--model-path", "<DeepSeek-V4-Flash>", "--tp", "2", "--speculative-algorithm", "NEXTN",
              "--speculative-num-steps", "2", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3"]


def test_dsv4_hook_rejects_nextn_before_it_becomes_eagle() -> None:
    res = resolve(LAUNCH_048, "0.5.19.dev410+gedff717ef", model_arch=DSV4)
    assert res.outcome == "error" and res.error is not None
    assert (res.error.type, res.error.message, res.error.raised_at) == (
        "AssertionError", "Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM",
        "apply_deepseek_v4_defaults")
    assert "--speculative-algorithm EAGLE" in res.error.explanation
    # docs/REFERENCE.md §2.4: DeepSeek-V4 sets 256 (with this warning) before the 48 rule could fire.
    assert res.warnings == ["Setting max_running_requests to 256 for DeepseekV4ForCausalLM."]


def test_dsv4_eagle_needs_an_explicit_topk_1() -> None:
    eagle = [*LAUNCH_048[:5], "EAGLE", "--speculative-num-steps", "2"]
    res = resolve(eagle, "0.5.23", model_arch=DSV4)
    assert res.error is not None and res.error.message == (
        "Only EAGLE speculative algorithm with topk == 1 is supported for DeepseekV4ForCausalLM")
    ok = resolve([*eagle, "--speculative-eagle-topk", "1"], "0.5.23", model_arch=DSV4)
    assert ok.outcome == "ok" and ok.effective is not None
    assert ok.effective["max_running_requests"] == 256 and ok.effective["speculative_num_draft_tokens"] == 3
    assert ok.warnings[0] == "Setting max_running_requests to 256 for DeepseekV4ForCausalLM."
    assert any(n.code == "max-running-model" for n in ok.notes)
    # The hook is 0.5.15+: 0.5.10 resolves NEXTN on the same target like any MTP target.
    old = resolve(LAUNCH_048, "0.5.10", model_arch=DSV4)
    assert old.outcome == "ok" and old.effective is not None and old.effective["max_running_requests"] == 48


def test_launch_server_takes_no_positional_model_path() -> None:
    # docs/REFERENCE.md §1.4 and sglang python/sglang/cli/serve.py `_normalize_positional_model_path`: only
    # `sglang serve <model>` (0.5.18+) moves a leading bare word into --model-path; launch_server.py passes
    # argv straight to prepare_server_args. Corpus 008 (source: https://github.com/sgl-project/sglang/pull/21723)
    # has a launch_server command with a redacted `**` where the model path was.
    args = ["**", "--speculative-algo", "NEXTN", "--speculative-num-steps", "3"]
    res = resolve(args, "0.5.23", entry="launch_server")
    assert res.outcome == "argparse_error"
    assert res.argparse_error == "the following arguments are required: --model-path/--model"
    assert "'**' is not read as the model" in res.notes[0].explanation
    serve = resolve(["/models/llama", "--tp", "2"], "0.5.23", entry="sglang")
    assert serve.outcome == "ok" and serve.requested["model_path"] == "/models/llama"


@pytest.mark.parametrize("text, want", [
    ("0.5.19.dev410+gedff717ef", (0, 5, 19, -1)),  # corpus 048 header: a source checkout
    ("0.5.5rc1", (0, 5, 5, -1)),
    ("v0.5.10", (0, 5, 10, 0)),
    ("0.5.6.post2", (0, 5, 6, 2)),
    ("0.5.6+cu124", (0, 5, 6, 0)),
])
def test_versions_as_sglang_reports_them(text: str, want: tuple[int, int, int, int]) -> None:
    assert parse_version(text) == want
    assert parse_version("0.5.10") < parse_version("0.5.19.dev410") < parse_version("0.5.19")


def test_missing_draft_path_is_said() -> None:
    # docs/REFERENCE.md §6: "MTP models (DeepSeek V3/R1, GLM-4.x MoE, ...): no draft path needed" — for any other
    # target SGLang has nothing to load as the draft.
    mtp = ["--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8", "--speculative-algorithm", "NEXTN",
           "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    known = resolve(mtp, "0.5.23", model_arch="DeepseekV3ForCausalLM")
    assert known.effective is not None and known.effective["speculative_draft_model_path"] == "deepseek-ai/DeepSeek-V3"
    assert not [a for a in known.assumptions if "--speculative-draft-model-path" in a]
    unknown = resolve(mtp, "0.5.23")
    assert any("no --speculative-draft-model-path" in a and "--model-arch" in a for a in unknown.assumptions)
    llama = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3"], "0.5.23", model_arch="LlamaForCausalLM")
    assert any("add --speculative-draft-model-path" in a for a in llama.assumptions)


# tests/data/corpus/049-eagle2-benchmark-prefill-cache-hit-rate-format.log header
# source: https://github.com/sgl-project/sglang/issues/2777 (2025-01: `--speculative-draft` was unique then)
LAUNCH_049 = ["--model", "meta-llama/Llama-2-7b-chat-hf", "--speculative-algo", "EAGLE", "--speculative-draft",
              "lmzheng/sglang-EAGLE-llama2-chat-7B", "--speculative-num-steps", "5", "--speculative-eagle-topk", "8",
              "--speculative-num-draft-tokens", "64", "--mem-fraction", "0.7"]


def test_old_abbreviation_keeps_its_value_in_the_fix() -> None:
    assert resolve(LAUNCH_049, "0.4.10.post2").outcome == "ok"
    res = resolve(LAUNCH_049, "0.5.6.post2")
    assert res.outcome == "argparse_error" and res.argparse_error.startswith(
        "ambiguous option: --speculative-draft could match --speculative-draft-model-path, ")
    note = res.notes[0]
    assert note.fix_set == (("--speculative-draft-model-path", "lmzheng/sglang-EAGLE-llama2-chat-7B"),)
    assert note.fix_unset == ("--speculative-draft",)
    # An ambiguity with no single old meaning gets no guessed replacement.
    spec = resolve(["--model-path", "m", "--speculative-num", "3"], "0.5.6.post2").notes[0]
    assert spec.fix_set == () and spec.fix_unset == ("--speculative-num",)
