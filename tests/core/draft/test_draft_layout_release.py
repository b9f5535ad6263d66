"""Key layout and layer count against the SGLang release's EAGLE-3 loader."""

from __future__ import annotations

from draftckpt import codes, draft_config, eagle3_tensors, finding, inspect_pair, layer_tensors


async def test_layers0_keys_on_0_5_6_are_silently_skipped(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors(layout="layers"), sglang_version="0.5.6")
    f = finding(result, "layout-layers-on-old-loader")
    assert (f.category, f.severity) == ("draft-format", "error")
    assert "SGLang 0.5.6 only loads midlayer.*" in f.title
    assert f.evidence == ["model.safetensors: layers.0.hidden_norm.weight", "layers in weights: [0]"]
    assert "rename layers.0.* to midlayer.*" in f.fix


async def test_layers0_keys_on_an_unknown_release_is_a_warning(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors(layout="layers"), sglang_version=None)
    assert finding(result, "layout-layers-on-old-loader").severity == "warning"
    assert codes(result, "error") == []


async def test_two_layer_draft_by_release(tmp_path):
    tensors = eagle3_tensors(layout="layers")
    tensors.update(layer_tensors("layers.1.", first=False))
    cfg = draft_config(num_hidden_layers=2)
    old = await inspect_pair(tmp_path / "old", cfg, tensors, sglang_version="0.5.11")
    f = finding(old, "config-layers-unsupported")
    assert (f.category, f.severity) == ("draft-config", "error")
    assert "ValueError: EAGLE3 currently only supports 1 layer" in f.title
    new = await inspect_pair(tmp_path / "new", cfg, tensors, sglang_version="0.5.12")
    assert codes(new) == []
    unknown = await inspect_pair(tmp_path / "unknown", cfg, tensors, sglang_version=None)
    assert finding(unknown, "config-layers-release").severity == "warning"


async def test_config_layer_count_vs_weights_on_0_5_12(tmp_path):
    missing = await inspect_pair(tmp_path / "m", draft_config(num_hidden_layers=2), eagle3_tensors(layout="layers"),
                                 sglang_version="0.5.12")
    f = finding(missing, "weights-layers-missing")
    assert f.severity == "error" and "layer(s) [1]" in f.title
    tensors = eagle3_tensors(layout="layers")
    tensors.update(layer_tensors("layers.1.", first=False))
    extra = await inspect_pair(tmp_path / "e", draft_config(), tensors, sglang_version="0.5.12")
    assert finding(extra, "weights-layers-extra").severity == "warning"
    assert codes(extra, "error") == []


async def test_both_layouts_at_once(tmp_path):
    tensors = eagle3_tensors()
    tensors.update(layer_tensors("layers.0."))
    result = await inspect_pair(tmp_path, draft_config(), tensors, sglang_version="0.5.12")
    assert finding(result, "layout-mixed").severity == "warning"


async def test_release_without_eagle3(tmp_path):
    result = await inspect_pair(tmp_path, draft_config(), eagle3_tensors(), sglang_version="0.4.4")
    assert "alg-release-no-eagle3" in codes(result, "error")
