"""Hub ids resolved in an HF cache (never downloaded); MTP drafts built into the target."""

from __future__ import annotations

import json

from draftckpt import codes, draft_config, eagle3_tensors, finding, w, write_ckpt, write_target

from spectui.core.draft import LocalReader, inspect


def cache_repo(root, repo: str, rev: str, ref: bool = True):
    org, name = repo.split("/")
    base = root / f"models--{org}--{name}"
    snap = base / "snapshots" / rev
    write_ckpt(snap, draft_config(), eagle3_tensors())
    if ref:
        (base / "refs").mkdir(parents=True)
        (base / "refs" / "main").write_text(rev)
    return snap


async def test_hub_id_resolved_in_hf_home_and_in_hub_cache(tmp_path):
    snap = cache_repo(tmp_path / "hf" / "hub", "acme/tiny-eagle3", "0123abcd")
    for cache in (tmp_path / "hf", tmp_path / "hf" / "hub"):  # HF_HOME, then HUGGINGFACE_HUB_CACHE
        result = await inspect(LocalReader(), draft="acme/tiny-eagle3", hf_cache=str(cache), algorithm="EAGLE3")
        assert result.draft["resolved_path"] == str(snap)
        assert result.draft["source"] == "hf-cache"
        assert result.draft["path"] == "acme/tiny-eagle3"
        assert codes(result, "error") == []


async def test_hub_id_without_refs_uses_the_only_snapshot(tmp_path):
    snap = cache_repo(tmp_path, "acme/tiny-eagle3", "feedbeef", ref=False)
    result = await inspect(LocalReader(), draft="acme/tiny-eagle3", hf_cache=str(tmp_path))
    assert result.draft["resolved_path"] == str(snap)
    assert result.draft["notes"] == ["acme/tiny-eagle3: no refs/main in the cache; using its only snapshot feedbeef"]


async def test_hub_id_not_in_cache_or_no_cache(tmp_path):
    result = await inspect(LocalReader(), draft="acme/absent", hf_cache=str(tmp_path))
    f = finding(result, "draft-path-missing")
    assert "spectui never downloads" in f.title
    assert f.evidence == [f"not found: {tmp_path}/models--acme--absent", f"not found: {tmp_path}/hub/models--acme--absent"]
    result = await inspect(LocalReader(), draft="acme/absent", hf_cache=None)
    assert "no HF cache location was given" in finding(result, "draft-path-missing").title


def write_mtp_target(path, with_mtp_weights: bool):
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 64,
           "num_hidden_layers": 2, "num_nextn_predict_layers": 1, "vocab_size": 512,
           "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}
    tensors = {"model.embed_tokens.weight": w(512, 64), "model.layers.0.input_layernorm.weight": w(64),
               "model.layers.1.input_layernorm.weight": w(64), "lm_head.weight": w(512, 64)}
    if with_mtp_weights:  # DeepSeek-V3 keeps its MTP module as layer num_hidden_layers
        tensors.update({"model.layers.2.eh_proj.weight": w(64, 128), "model.layers.2.enorm.weight": w(64)})
    write_ckpt(path, cfg, tensors, shards=2)


async def test_mtp_target_without_a_draft_path(tmp_path):
    write_mtp_target(tmp_path / "ok", True)
    result = await inspect(LocalReader(), draft=None, model=str(tmp_path / "ok"), algorithm="NEXTN")
    assert result.draft["format"] == "mtp" and result.draft["num_layers"] == 1
    assert codes(result) == []
    # index only: config.json + model.safetensors.index.json, no shard header
    ok = tmp_path / "ok"
    assert result.draft["bytes_read"] == sum((ok / f).stat().st_size
                                             for f in ("config.json", "model.safetensors.index.json"))


async def test_mtp_layers_stripped_from_the_checkpoint(tmp_path):
    write_mtp_target(tmp_path / "stripped", False)
    result = await inspect(LocalReader(), draft=None, model=str(tmp_path / "stripped"), algorithm="NEXTN")
    f = finding(result, "mtp-weights-missing")
    assert (f.category, f.severity) == ("draft-weights", "error")
    assert f.evidence == ["config.json num_nextn_predict_layers = 1",
                          "model.safetensors.index.json: no eh_proj/enorm or layers.2.* tensors"]
    eagle3 = await inspect(LocalReader(), draft=str(tmp_path / "stripped"), model=str(tmp_path / "stripped"),
                           algorithm="EAGLE3")
    assert "alg-mtp-as-eagle3" in codes(eagle3, "error")


async def test_index_json_that_is_broken(tmp_path):
    d = write_ckpt(tmp_path / "d", draft_config(), eagle3_tensors(), shards=2)
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": ["not", "a", "map"]}))
    write_target(tmp_path / "t")
    result = await inspect(LocalReader(), draft=str(d), model=str(tmp_path / "t"), algorithm="EAGLE3")
    # the tensor names are unknown, so nothing is claimed about them (no "no d2t", no "no fc")
    assert codes(result, "error") == ["weights-index-unreadable"]


async def test_mtp_class_without_mtp_layers(tmp_path):
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 512}
    write_ckpt(tmp_path / "m", cfg, {"lm_head.weight": w(512, 64)})
    result = await inspect(LocalReader(), draft=None, model=str(tmp_path / "m"), algorithm="NEXTN")
    assert codes(result) == ["mtp-none"]
    assert finding(result, "mtp-none").category == "draft-missing"
