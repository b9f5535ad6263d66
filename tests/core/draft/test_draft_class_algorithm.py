"""Class vs weights, class vs --speculative-algorithm, formats SGLang cannot load."""

from __future__ import annotations

from draftckpt import (
    HIDDEN,
    codes,
    d2t_values,
    draft_config,
    eagle3_tensors,
    finding,
    inspect_pair,
    layer_tensors,
    t2d_values,
    w,
)


async def test_eagle3_weights_under_the_targets_class_predict_the_keyerror(tmp_path):
    cfg = draft_config(architectures=["LlamaForCausalLM"])
    result = await inspect_pair(tmp_path, cfg, eagle3_tensors())
    f = finding(result, "arch-mislabelled")
    assert (f.category, f.severity) == ("draft-architecture", "error")
    # sorted midlayer keys: hidden_norm, input_layernorm, mlp.down_proj, mlp.gate_proj <- first fused one
    assert "KeyError: 'midlayer.mlp.gate_up_proj.weight'" in f.title
    assert "config.json architectures = ['LlamaForCausalLM']" in f.evidence
    assert any("the same class" in e for e in f.evidence)
    assert "LlamaForCausalLMEagle3" in f.fix
    assert result.draft["format"] == "sglang-eagle3" and result.draft["format_from"] == "weights"
    assert result.exit_code == 1


async def test_mislabelled_attention_only_names_qkv_and_keeps_the_model_prefix(tmp_path):
    tensors = {k: v for k, v in eagle3_tensors(prefix="model.").items() if ".mlp." not in k}
    result = await inspect_pair(tmp_path, draft_config(architectures=["Qwen3ForCausalLM"]), tensors)
    f = finding(result, "arch-mislabelled")
    assert "KeyError: 'model.midlayer.self_attn.qkv_proj.weight'" in f.title
    assert not any("the same class" in e for e in f.evidence)  # target is LlamaForCausalLM


async def test_eagle3_draft_launched_with_eagle_or_nextn(tmp_path):
    for alg in ("EAGLE", "NEXTN"):
        result = await inspect_pair(tmp_path / alg, draft_config(), eagle3_tensors(), algorithm=alg)
        f = finding(result, "alg-eagle3-draft-as-eagle")
        assert (f.category, f.severity) == ("draft-algorithm", "error")
        assert "accept length exactly 1.0" in f.title
        assert f"launch --speculative-algorithm {alg}" in f.evidence
        assert f.fix == "launch with --speculative-algorithm EAGLE3"


def eagle2_tensors() -> dict:
    t = {"fc.weight": w(HIDDEN, 2 * HIDDEN)}
    t.update({k: v for k, v in layer_tensors("layers.0.", first=False).items() if "hidden_norm" not in k})
    return t


async def test_eagle2_draft_launched_with_eagle3(tmp_path):
    cfg = draft_config(architectures=["LlamaForCausalLMEagle"], draft_vocab_size=None)
    result = await inspect_pair(tmp_path, cfg, eagle2_tensors(), algorithm="EAGLE3")
    assert result.draft["format"] == "eagle"
    assert codes(result, "error") == ["alg-eagle-draft-as-eagle3"]
    ok = await inspect_pair(tmp_path / "ok", cfg, eagle2_tensors(), algorithm="EAGLE")
    assert codes(ok, "error") == []


async def test_eagle2_weights_with_a_plain_class(tmp_path):
    cfg = draft_config(architectures=["LlamaForCausalLM"], draft_vocab_size=None)
    result = await inspect_pair(tmp_path, cfg, eagle2_tensors(), algorithm="EAGLE")
    f = finding(result, "arch-mislabelled-eagle")
    assert f.severity == "error" and "LlamaForCausalLMEagle" in f.fix


async def test_eagle3_class_over_eagle2_weights(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(draft_vocab_size=None), eagle2_tensors())
    f = finding(result, "arch-eagle3-class-eagle2-weights")
    assert "fc.weight shape [64, 128] = [hidden, 2*hidden]" in f.evidence[1]


async def test_vllm_speculators_checkpoint_is_refused(tmp_path):
    cfg = {
        "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
        "speculators_config": {"algorithm": "eagle3", "verifier": {"name_or_path": "meta-llama/Llama-3.1-8B",
                                                                   "architectures": ["LlamaForCausalLM"]}},
        "transformer_layer_config": {"architectures": ["LlamaForCausalLM"], "hidden_size": HIDDEN,
                                     "num_hidden_layers": 1, "vocab_size": 512, "max_position_embeddings": 4096},
        "draft_vocab_size": 128, "target_hidden_size": None, "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
    }
    tensors = eagle3_tensors(layout="layers")
    result = await inspect_pair(tmp_path, cfg, tensors)
    assert result.draft["format"] == "speculators"
    f = finding(result, "format-speculators")
    assert (f.category, f.severity) == ("draft-format", "error")
    assert "config.json has speculators_config" in f.evidence
    assert "config.json eagle_aux_hidden_state_layer_ids = [2, 4, 5]" in f.evidence
    assert "subtract 1" in f.fix
    assert result.draft["hidden_size"] == 64  # read from transformer_layer_config


async def test_missing_tensors_an_eagle3_draft_needs(tmp_path):
    t = eagle3_tensors()
    for gone in ("lm_head.weight", "fc.weight", "midlayer.self_attn.o_proj.weight"):
        del t[gone]
    result = await inspect_pair(tmp_path, draft_config(), t)
    assert codes(result, "error") == ["weights-layer-incomplete", "weights-no-fc", "weights-no-lm-head"]
    assert finding(result, "weights-layer-incomplete").evidence == ["missing: midlayer.self_attn.o_proj.weight"]


async def test_fused_projection_names_are_complete(tmp_path):
    t = {k: v for k, v in eagle3_tensors().items() if "_proj" not in k or "o_proj" in k or "down_proj" in k}
    t["midlayer.self_attn.qkv_proj.weight"] = w(128, 2 * HIDDEN)
    t["midlayer.mlp.gate_up_proj.weight"] = w(256, HIDDEN)
    result = await inspect_pair(tmp_path, draft_config(), t)
    assert codes(result) == []


async def test_leftover_tensors_are_reported_as_skipped(tmp_path):
    t = eagle3_tensors()
    t["optimizer.step"] = d2t_values()[:1]
    t["t2d"] = t2d_values()
    result = await inspect_pair(tmp_path, draft_config(), t)
    f = finding(result, "weights-skipped")
    assert f.severity == "info" and f.evidence == ["model.safetensors: optimizer.step"]


async def test_no_draft_with_eagle3_on_a_plain_target(tmp_path):
    from draftckpt import write_target

    from spectui.core.draft import LocalReader, inspect

    write_target(tmp_path / "target")
    result = await inspect(LocalReader(), draft=None, model=str(tmp_path / "target"), algorithm="EAGLE3")
    f = finding(result, "draft-none")
    assert (f.category, f.severity) == ("draft-missing", "error")
    assert "target config.json architectures = ['LlamaForCausalLM']" in f.evidence
    assert result.to_json()["draft"] is None
