"""Bad input gives a clear finding, never a traceback and never a large read."""

from __future__ import annotations

import json
import struct

from draftckpt import codes, draft_config, eagle3_tensors, finding, write_ckpt, write_target

from spectui.core.draft import LocalReader, inspect


async def run(path, **kw):
    reader = LocalReader()
    kw.setdefault("algorithm", "EAGLE3")
    result = await inspect(reader, draft=str(path), **kw)
    assert "internal-check-error" not in codes(result)
    json.dumps(result.to_json())
    return result, reader


async def test_missing_path(tmp_path):
    result, reader = await run(tmp_path / "nope")
    f = finding(result, "draft-path-missing")
    assert (f.category, f.severity) == ("draft-missing", "error")
    assert f.evidence == [f"{tmp_path / 'nope'}: no such file or directory"]
    assert reader.bytes_read == 0 and result.exit_code == 1


async def test_directory_without_config_json(tmp_path):
    write_ckpt(tmp_path / "d", None, eagle3_tensors())
    result, reader = await run(tmp_path / "d")
    f = finding(result, "draft-config-unreadable")
    assert (f.category, f.severity) == ("draft-config", "error")
    assert "no config.json" in f.title
    assert reader.bytes_read == 0


async def test_config_json_that_is_not_json(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"],')
    result, _ = await run(tmp_path / "d")
    assert "config.json is not valid JSON" in finding(result, "draft-config-unreadable").title


async def test_a_file_instead_of_a_directory(tmp_path):
    write_ckpt(tmp_path / "d", draft_config(), eagle3_tensors())
    result, _ = await run(tmp_path / "d" / "model.safetensors")
    assert "is a file" in finding(result, "draft-config-unreadable").title


def write_raw(tmp_path, payload: bytes):
    d = write_ckpt(tmp_path / "d", draft_config(), None)
    (d / "model.safetensors").write_bytes(payload)
    return d


async def test_file_shorter_than_the_length_field(tmp_path):
    result, _ = await run(write_raw(tmp_path, b"\x10\x00\x00"))
    f = finding(result, "weights-header")
    assert (f.category, f.severity) == ("draft-weights", "error")
    assert "truncated: the file is 3 bytes" in f.title


async def test_truncated_header(tmp_path):
    header = json.dumps({"fc.weight": {"dtype": "F16", "shape": [64, 192], "data_offsets": [0, 24576]}}).encode()
    result, reader = await run(write_raw(tmp_path, struct.pack("<Q", len(header)) + header[:40]))
    assert f"the header says {len(header)} bytes of JSON but the file is only 48 bytes" in \
        finding(result, "weights-header").title


async def test_header_claiming_4_gb_of_json_is_refused_without_reading_it(tmp_path):
    d = write_raw(tmp_path, struct.pack("<Q", 4 * 1024**3) + b"{" + b" " * 100)
    result, reader = await run(d)
    f = finding(result, "weights-header")
    assert "header length field says 4294967296 bytes (4.0 GB) of JSON" in f.title
    config_bytes = (d / "config.json").stat().st_size
    assert reader.bytes_read == config_bytes + 8  # config.json and the length field, nothing more


async def test_header_that_is_not_json(tmp_path):
    result, _ = await run(write_raw(tmp_path, struct.pack("<Q", 12) + b"{not json!!}"))
    assert "header is not valid JSON" in finding(result, "weights-header").title


async def test_tensor_data_cut_short(tmp_path):
    d = write_ckpt(tmp_path / "d", draft_config(), eagle3_tensors())
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[:-100])
    result, _ = await run(d)
    title = finding(result, "weights-header").title
    n = int.from_bytes(data[:8], "little")
    assert f"declares {len(data) - 8 - n} bytes" in title and f"the file holds {len(data) - 8 - n - 100}" in title


async def test_index_points_at_a_missing_shard(tmp_path):
    d = write_ckpt(tmp_path / "d", draft_config(), eagle3_tensors(), shards=2)
    (d / "model-00002-of-00002.safetensors").unlink()
    result, _ = await run(d)
    f = finding(result, "weights-file-missing")
    assert f.severity == "error"
    assert f.evidence[0] == "model.safetensors.index.json weight_map -> model-00002-of-00002.safetensors"


async def test_no_weight_files(tmp_path):
    d = write_ckpt(tmp_path / "d", draft_config(), None)
    result, _ = await run(d)
    assert "weights-none" in codes(result, "error")


async def test_odd_config_values_do_not_crash(tmp_path):
    cfg = draft_config(architectures="LlamaForCausalLMEagle3", hidden_size="64", draft_vocab_size=[128],
                       eagle_config={"eagle_aux_hidden_state_layer_ids": ["1", None, 3.5]})
    write_target(tmp_path / "t")
    write_ckpt(tmp_path / "d", cfg, eagle3_tensors())
    result, _ = await run(tmp_path / "d", model=str(tmp_path / "t"))
    assert codes(result, "error") == ["arch-none", "aux-not-integers", "config-not-integer"]
    assert finding(result, "arch-none").evidence[0] == "config.json architectures = 'LlamaForCausalLMEagle3'"
    assert finding(result, "config-not-integer").evidence == ["config.json hidden_size = '64'",
                                                              "config.json draft_vocab_size = [128]"]


async def test_unreadable_target_is_reported_not_fatal(tmp_path):
    write_ckpt(tmp_path / "d", draft_config(), eagle3_tensors())
    result, _ = await run(tmp_path / "d", model=str(tmp_path / "no-target"))
    assert finding(result, "target-unreadable").severity == "info"
    assert result.to_json()["target"]["error"].endswith("does not exist on this host")
    assert codes(result, "error") == []
