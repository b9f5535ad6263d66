"""A 10 GB draft is inspected from its header alone (a sparse file: real header, no real tensor data)."""

from __future__ import annotations

import json
import struct
import time

import numpy as np
from draftckpt import codes, write_ckpt
from safetensors import safe_open

from spectui.core.draft import LocalReader, inspect

# A Llama-3.3-70B-sized EAGLE-3 draft stored in float32: hidden 8192, 64 heads x 128, 8 KV heads,
# intermediate 32768, vocab 128256, draft vocabulary 32000.
H, HEADS, KV, INTER, VOCAB, DV = 8192, 64, 8, 32768, 128256, 32000
SHAPES = [
    ("d2t", "I64", [DV]), ("t2d", "BOOL", [VOCAB]),
    ("embed_tokens.weight", "F32", [VOCAB, H]), ("fc.weight", "F32", [H, 3 * H]),
    ("midlayer.hidden_norm.weight", "F32", [H]), ("midlayer.input_layernorm.weight", "F32", [H]),
    ("midlayer.post_attention_layernorm.weight", "F32", [H]),
    ("midlayer.self_attn.q_proj.weight", "F32", [HEADS * 128, 2 * H]),
    ("midlayer.self_attn.k_proj.weight", "F32", [KV * 128, 2 * H]),
    ("midlayer.self_attn.v_proj.weight", "F32", [KV * 128, 2 * H]),
    ("midlayer.self_attn.o_proj.weight", "F32", [H, HEADS * 128]),
    ("midlayer.mlp.gate_proj.weight", "F32", [INTER, H]), ("midlayer.mlp.up_proj.weight", "F32", [INTER, H]),
    ("midlayer.mlp.down_proj.weight", "F32", [H, INTER]),
    ("norm.weight", "F32", [H]), ("lm_head.weight", "F32", [DV, H]),
]
WIDTH = {"I64": 8, "BOOL": 1, "F32": 4}
HOT = list(range(16000)) + list(range(64000, 80000))  # target ids of the 32000 draft tokens


def write_sparse_draft(d) -> tuple[int, int]:
    header, offset = {}, 0
    for name, dtype, shape in SHAPES:
        n = WIDTH[dtype] * int(np.prod(shape))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    d2t = np.array([t - i for i, t in enumerate(HOT)], dtype="<i8").tobytes()
    t2d = np.zeros(VOCAB, dtype=bool)
    t2d[HOT] = True
    with open(d / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + d2t + t2d.tobytes())
        f.truncate(8 + len(raw) + offset)  # the rest is a hole: declared, never written
    return len(raw), offset


async def test_ten_gb_draft_reads_only_headers_and_maps(tmp_path):
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": H,
           "intermediate_size": INTER, "num_attention_heads": HEADS, "num_key_value_heads": KV,
           "num_hidden_layers": 1, "vocab_size": VOCAB, "draft_vocab_size": DV, "max_position_embeddings": 131072,
           "tie_word_embeddings": False, "torch_dtype": "float32",
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 39, 76]}}
    d = write_ckpt(tmp_path / "d", cfg, None)
    n, data = write_sparse_draft(d)
    assert data > 10 * 10**9  # the header declares over 10 GB of tensors
    with safe_open(str(d / "model.safetensors"), framework="np") as st:  # the real library accepts the file
        assert st.get_tensor("d2t")[16000] == 64000 - 16000

    reader = LocalReader()
    start = time.monotonic()
    result = await inspect(reader, draft=str(d), algorithm="EAGLE3", sglang_version="0.5.6")
    elapsed = time.monotonic() - start
    assert codes(result, "error") == []
    assert result.draft["tensor_bytes"] == data
    # config.json + 8 + header + d2t (32000 x 8) + t2d (128256): about 400 KB of a 10 GB file
    expected = (d / "config.json").stat().st_size + 8 + n + DV * 8 + VOCAB
    assert reader.bytes_read == expected == result.draft["bytes_read"]
    assert reader.bytes_read < 1_000_000
    assert elapsed < 5.0
