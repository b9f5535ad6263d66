"""A healthy EAGLE-3 draft gives no finding at all, and the JSON has the contract's shape."""

from __future__ import annotations

import json

from draftckpt import (
    DRAFT_VOCAB,
    VOCAB,
    codes,
    draft_config,
    eagle3_tensors,
    header_len,
    inspect_pair,
    write_ckpt,
    write_target,
)

from spectui.core.draft import LocalReader, inspect


async def test_healthy_eagle3_draft_has_no_findings_and_contract_fields(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors())
    out = result.to_json()
    assert out["findings"] == []
    assert result.exit_code == 0
    d = out["draft"]
    assert {k: d[k] for k in ("format", "architectures", "hidden_size", "num_layers", "vocab_size",
                              "draft_vocab_size", "max_position_embeddings", "aux_layer_ids")} == {
        "format": "sglang-eagle3", "architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64,
        "num_layers": 1, "vocab_size": 512, "draft_vocab_size": 128, "max_position_embeddings": 4096,
        "aux_layer_ids": [1, 3, 4]}
    assert d["path"] == str(tmp_path / "draft")
    assert d["key_layout"] == "midlayer"
    # config.json + the 8-byte length + the JSON header + d2t (128 x int64) + t2d (512 x bool); no tensor data
    config_bytes = (tmp_path / "draft" / "config.json").stat().st_size
    n = header_len(tmp_path / "draft" / "model.safetensors")
    assert d["bytes_read"] == config_bytes + 8 + n + DRAFT_VOCAB * 8 + VOCAB
    t = out["target"]
    assert {k: t[k] for k in ("path", "architectures", "hidden_size", "num_layers", "vocab_size",
                              "max_position_embeddings")} == {
        "path": str(tmp_path / "target"), "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
        "num_layers": 8, "vocab_size": 512, "max_position_embeddings": 4096}
    # the target is sharded with an index: only config.json and the index are read
    t_bytes = sum((tmp_path / "target" / f).stat().st_size for f in ("config.json", "model.safetensors.index.json"))
    assert t["bytes_read"] == t_bytes
    json.dumps(out)  # serialisable as is


async def test_healthy_on_newest_release_and_sharded_with_model_prefix(tmp_path):
    tensors = eagle3_tensors(prefix="model.")
    write_target(tmp_path / "target")
    write_ckpt(tmp_path / "draft", draft_config(), tensors, shards=3)
    result = await inspect(LocalReader(), draft=str(tmp_path / "draft"), model=str(tmp_path / "target"),
                           algorithm="eagle3", sglang_version="0.5.23")
    assert codes(result) == []
    assert result.draft["files"] == ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                     "model-00003-of-00003.safetensors"]
    assert result.draft["tensors"] == 15


async def test_layers0_layout_is_healthy_from_0_5_12(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors(layout="layers"), sglang_version="0.5.12")
    assert codes(result) == []
    assert result.draft["key_layout"] == "layers"


async def test_no_launch_information_still_inspects(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors(), algorithm=None, sglang_version=None)
    assert codes(result, "error") == []
