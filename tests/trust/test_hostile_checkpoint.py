"""Hostile checkpoints, built here: deeply nested config.json, safetensors header and index; an index
listing 200,000 shards. `inspect` reports each as a finding (no traceback), quickly."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spectui.core.draft import HeaderError, LocalReader, checkpoint, read_header

CONFIG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1, "vocab_size": 100}
DEEP = "[" * 100_000 + "]" * 100_000
DEEPISH = '{"a":' * 300 + "1" + "}" * 300  # parses (under the recursion limit), nested past the depth limit


def _ckpt(root: Path, name: str, files: dict[str, str | bytes]) -> Path:
    d = root / name
    d.mkdir()
    for fname, data in {"config.json": json.dumps(CONFIG), **files}.items():
        (d / fname).write_bytes(data.encode() if isinstance(data, str) else data)
    return d


def _st(header: str) -> bytes:
    raw = header.encode()
    return struct.pack("<Q", len(raw)) + raw


@pytest.mark.parametrize(("files", "words"), [
    ({"config.json": DEEP}, "config.json is not valid JSON: JSON nested deeper than 64 levels"),
    ({"config.json": DEEPISH}, "config.json is not valid JSON: JSON nested deeper than 64 levels"),
    ({"model.safetensors": _st('{"__metadata__": ' + DEEPISH + "}")}, "header is not valid JSON"),
    ({"model.safetensors": _st(DEEP)}, "header is not valid JSON"),
    ({"model.safetensors.index.json": '{"weight_map": ' + DEEP + "}"}, "index.json is not valid JSON"),
], ids=["config-deep", "config-deepish", "header-deepish", "header-deep", "index-deep"])
def test_deeply_nested_checkpoint_json_is_a_finding(tmp_path: Path, files: dict, words: str) -> None:
    draft = _ckpt(tmp_path, "draft", files)
    model = _ckpt(tmp_path, "model", {})
    out = subprocess.run([sys.executable, "-m", "spectui", "inspect", "local", "--draft", str(draft),
                          "--model", str(model)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in out.stderr and out.returncode in (1, 2), out.stderr
    assert words in " ".join((out.stdout + out.stderr).split())  # the view wraps to the terminal


async def test_a_deep_header_is_a_header_error(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(_st(DEEPISH))
    with pytest.raises(HeaderError, match="nested deeper than 64"):
        await read_header(LocalReader(), str(path))


async def test_an_index_of_200k_shards_is_capped_and_linear(tmp_path: Path) -> None:
    weight_map = {f"t{i}": f"model-{i:06d}-of-200000.safetensors" for i in range(200_000)}
    d = _ckpt(tmp_path, "many", {"model.safetensors.index.json": json.dumps({"weight_map": weight_map})})
    start = time.monotonic()
    ckpt = await checkpoint.load(LocalReader(), str(d))
    took = time.monotonic() - start
    assert ckpt.files == [] and len(ckpt.tensors) == 200_000
    assert any(kind == "index-unreadable" and "200,000 weight files" in msg for kind, msg, _ in ckpt.problems)
    assert took < 30, took  # was 108 s (a header read, and a finding, per listed shard)
