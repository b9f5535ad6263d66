"""Draft vs target: hidden size, vocabulary maps, aux layers, context length, dtype and rope."""

from __future__ import annotations

import numpy as np
from draftckpt import (
    DROP,
    HOT_IDS,
    codes,
    d2t_values,
    draft_config,
    eagle3_tensors,
    finding,
    inspect_pair,
    t2d_values,
    w,
)

# --- hidden size -------------------------------------------------------------------------------------------


async def test_target_wider_than_draft_without_target_hidden_size(tmp_path):
    # draft hidden 64 trained on a 96-wide target: fc.weight [64, 288] = [64, 3 x 96]
    tensors = eagle3_tensors(fc_in=288)
    result = await inspect_pair(tmp_path, draft_config(), tensors, target={"hidden_size": 96})
    f = finding(result, "hidden-target-mismatch")
    assert (f.category, f.severity) == ("draft-hidden-size", "error")
    assert "hidden states are 96 wide but the draft expects 64" in f.title
    assert "draft config.json has no target_hidden_size" in f.evidence
    assert f.fix == 'set "target_hidden_size": 96 in the draft config.json'
    fixed = await inspect_pair(tmp_path / "fixed", draft_config(target_hidden_size=96), tensors,
                               target={"hidden_size": 96})
    assert codes(fixed, "error") == []


async def test_fc_rows_and_qkv_width_against_hidden_size(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(hidden_size=80), eagle3_tensors())
    assert finding(result, "hidden-fc-rows").evidence == ["model.safetensors: fc.weight shape [64, 192]",
                                                          "config.json hidden_size = 80"]
    assert finding(result, "hidden-qkv-width").severity == "error"  # q_proj reads 128, 2 x 80 = 160


# --- vocabulary maps ---------------------------------------------------------------------------------------


async def test_reduced_head_without_d2t(tmp_path):
    t = eagle3_tensors()
    del t["d2t"], t["t2d"]
    result = await inspect_pair(tmp_path, draft_config(), t)
    f = finding(result, "vocab-no-d2t")
    assert (f.category, f.severity) == ("draft-vocab-map", "error")
    assert f.evidence == ["config.json draft_vocab_size = 128", "config.json vocab_size = 512", "no tensor d2t"]


async def test_d2t_shorter_than_draft_vocab_and_t2d_sum(tmp_path):
    t = eagle3_tensors()
    t["d2t"] = d2t_values(HOT_IDS[:100])
    t["t2d"] = t2d_values(HOT_IDS[:100])
    result = await inspect_pair(tmp_path, draft_config(), t)
    assert finding(result, "vocab-d2t-length").evidence == ["model.safetensors: d2t shape [100]",
                                                            "config.json draft_vocab_size = 128"]
    f = finding(result, "vocab-t2d-sum")
    assert f.severity == "warning" and "t2d marks 100 target tokens but draft_vocab_size is 128" in f.title


async def test_d2t_values_outside_the_target_vocab_and_duplicates(tmp_path):
    hot = list(range(127)) + [600]  # the last draft token maps to target id 600 >= 512
    t = eagle3_tensors()
    t["d2t"] = d2t_values(hot)
    result = await inspect_pair(tmp_path, draft_config(), t)
    f = finding(result, "vocab-d2t-range")
    assert f.evidence == ["d2t[127] = 473 -> target id 600", "target vocab_size = 512"]  # 600 - 127 = 473
    assert "vocab-t2d-d2t-disagree" in codes(result)  # t2d still marks HOT_IDS
    dup = eagle3_tensors()
    dup["d2t"] = np.array([0] * 127 + [-1], dtype=np.int64)  # draft 127 -> 126, already draft 126's target
    result = await inspect_pair(tmp_path / "dup", draft_config(), dup)
    assert finding(result, "vocab-d2t-duplicates").evidence == [
        "model.safetensors: d2t (128 entries, 127 distinct target ids)"]


async def test_all_zero_d2t_is_suspicious(tmp_path):
    t = eagle3_tensors()
    t["d2t"] = np.zeros(128, dtype=np.int64)
    t["t2d"] = t2d_values(list(range(128)))
    result = await inspect_pair(tmp_path, draft_config(), t)
    assert codes(result) == ["vocab-d2t-identity"]


async def test_vocab_size_and_lm_head_rows(tmp_path):
    t = eagle3_tensors()
    t["lm_head.weight"] = w(100, 64)
    result = await inspect_pair(tmp_path, draft_config(), t, target={"vocab_size": 1024})
    assert finding(result, "vocab-target-mismatch").evidence == ["draft config.json vocab_size = 512",
                                                                 "target config.json vocab_size = 1024"]
    assert finding(result, "vocab-lm-head-rows").fix == "set draft_vocab_size to 100"


async def test_missing_draft_vocab_size_key(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(draft_vocab_size=DROP), eagle3_tensors())
    assert finding(result, "config-no-draft-vocab-size").category == "draft-config"


# --- aux layers --------------------------------------------------------------------------------------------


async def test_no_eagle_config_falls_back_to_default_layers(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(eagle_config=DROP), eagle3_tensors())
    f = finding(result, "aux-no-eagle-config")
    assert (f.category, f.severity) == ("draft-aux-layers", "warning")
    assert "ids [1, 3, 4], capturing layers [2, 4, 5]" in f.title  # 8-layer target: [1, 8//2-1, 8-4]
    assert result.draft["aux_layer_ids"] is None


async def test_top_level_ids_are_not_read_by_sglang(tmp_path):
    cfg = draft_config(eagle_config=DROP, eagle_aux_hidden_state_layer_ids=[2, 4, 6])
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors())
    f = finding(result, "aux-top-level")
    assert f.severity == "warning" and "minus 1" in f.fix
    same = draft_config(eagle_config=DROP, eagle_aux_hidden_state_layer_ids=[2, 4, 5])
    assert finding(await inspect_pair(tmp_path / "s", same, eagle3_tensors()), "aux-top-level").severity == "info"


async def test_ids_beyond_the_targets_layers(tmp_path):
    cfg = draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 3, 7]})
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors())
    f = finding(result, "aux-out-of-range")
    assert f.severity == "error" and "[7]" in f.title  # layer 7 + 1 = 8 never runs in an 8-layer target
    assert f.evidence == ["config.json eagle_config.eagle_aux_hidden_state_layer_ids = [1, 3, 7]",
                          "target config.json num_hidden_layers = 8"]


async def test_ids_in_the_input_of_layer_convention(tmp_path):
    cfg = draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [2, 4, 5]})
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors(), sglang_version="0.5.23")
    f = finding(result, "aux-convention")
    assert "SGLang adds 1 and captures [3, 5, 6]" in f.title
    assert "use [1, 3, 4]" in f.fix


async def test_custom_ids_with_cuda_graphs_on_0_5_6(tmp_path):
    cfg = draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [0, 3, 5]})
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors(), sglang_version="0.5.6")
    assert codes(result) == ["aux-cuda-graph"]
    later = await inspect_pair(tmp_path / "later", cfg, eagle3_tensors(), sglang_version="0.5.11")
    assert codes(later) == []


async def test_four_ids_for_a_three_state_fc(tmp_path):
    cfg = draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [0, 2, 4, 5]})
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors())
    f = finding(result, "aux-count-fc")
    assert f.title == "fc.weight takes 3 hidden states but eagle_config.eagle_aux_hidden_state_layer_ids lists 4"


async def test_four_state_fc_on_a_release_with_three_hard_coded(tmp_path):
    cfg = draft_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [0, 2, 4, 5]})
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors(fc_in=256), sglang_version="0.5.6")
    f = finding(result, "aux-count-release")
    assert "into parameter (torch.Size([64, 192]))" in f.title
    new = await inspect_pair(tmp_path / "new", cfg, eagle3_tensors(fc_in=256), sglang_version="0.5.12")
    assert codes(new, "error") == []


# --- context, dtype, rope ----------------------------------------------------------------------------------


async def test_draft_context_below_target_and_prompts(tmp_path):
    cfg = draft_config(max_position_embeddings=2048)
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors())
    assert codes(result) == ["context-below-target"]
    long = await inspect_pair(tmp_path / "long", cfg, eagle3_tensors(), max_prompt_len=2045, draft_tokens=4)
    f = finding(long, "context-prompts-beyond-draft")  # 2045 + 4 = 2049 > 2048
    assert f.severity == "error" and f.category == "draft-context-length"
    short = await inspect_pair(tmp_path / "short", cfg, eagle3_tensors(), max_prompt_len=2044, draft_tokens=4)
    assert "context-prompts-beyond-draft" not in codes(short)


async def test_dtype_and_rope_differences(tmp_path):
    cfg = draft_config(torch_dtype="float32", rope_theta=10000.0)
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors(),
                                target={"rope_scaling": {"rope_type": "llama3", "factor": 8.0}})
    assert codes(result) == ["config-dtype", "config-rope-scaling-missing", "config-rope-theta"]
    assert finding(result, "config-dtype").severity == "warning"
    assert finding(result, "config-rope-theta").evidence == ["draft config.json rope_theta = 10000.0",
                                                             "target config.json rope_theta = 500000.0"]
