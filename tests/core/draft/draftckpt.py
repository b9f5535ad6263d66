"""Builders for small REAL checkpoints (config.json + safetensors written by the safetensors library).

Dimensions, chosen so expected values can be worked out by hand:
  target: LlamaForCausalLM, hidden 64, 8 layers, vocab 512, max_position_embeddings 4096
          -> SGLang's default capture [2, 4, 5] = eagle_aux_hidden_state_layer_ids [1, 3, 4]
  draft:  LlamaForCausalLMEagle3, hidden 64, 1 layer, 4 heads x 16, 2 KV heads, intermediate 128,
          draft_vocab_size 128; fc.weight [64, 192] (3 x 64); q_proj [64, 128] (reads 2 x 64)
  hot vocabulary: target ids 0..63 and 200..263, so d2t[i] = 0 for i < 64 and 136 for i >= 64
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

HIDDEN, VOCAB, DRAFT_VOCAB, TARGET_LAYERS = 64, 512, 128, 8
HOT_IDS = list(range(64)) + list(range(200, 264))


def target_config(**over: Any) -> dict[str, Any]:
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
           "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": TARGET_LAYERS, "vocab_size": VOCAB, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(over)
    return cfg


def draft_config(**over: Any) -> dict[str, Any]:
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": HIDDEN,
           "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
           "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 4], "use_aux_hidden_state": True}}
    cfg.update(over)
    return {k: v for k, v in cfg.items() if v is not _DROP}


_DROP = object()
DROP: Any = _DROP  # pass as a value to remove a key from the config


def w(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype=np.float16)


def layer_tensors(prefix: str, hidden: int = HIDDEN, inter: int = 128, first: bool = True) -> dict[str, np.ndarray]:
    t = {
        f"{prefix}post_attention_layernorm.weight": w(hidden),
        f"{prefix}self_attn.q_proj.weight": w(64, 2 * hidden if first else hidden),
        f"{prefix}self_attn.k_proj.weight": w(32, 2 * hidden if first else hidden),
        f"{prefix}self_attn.v_proj.weight": w(32, 2 * hidden if first else hidden),
        f"{prefix}self_attn.o_proj.weight": w(hidden, 64),
        f"{prefix}mlp.gate_proj.weight": w(inter, hidden),
        f"{prefix}mlp.up_proj.weight": w(inter, hidden),
        f"{prefix}mlp.down_proj.weight": w(hidden, inter),
        f"{prefix}hidden_norm.weight": w(hidden),
    }
    if first:
        t[f"{prefix}input_layernorm.weight"] = w(hidden)
    return t


def d2t_values(hot: list[int] = HOT_IDS) -> np.ndarray:
    return np.array([t - i for i, t in enumerate(hot)], dtype=np.int64)


def t2d_values(hot: list[int] = HOT_IDS, vocab: int = VOCAB) -> np.ndarray:
    mask = np.zeros(vocab, dtype=bool)
    mask[hot] = True
    return mask


def eagle3_tensors(layout: str = "midlayer", prefix: str = "", fc_in: int = 3 * HIDDEN,
                   hidden: int = HIDDEN) -> dict[str, np.ndarray]:
    layer = "midlayer." if layout == "midlayer" else "layers.0."
    t = {"fc.weight": w(hidden, fc_in), "norm.weight": w(hidden), "lm_head.weight": w(DRAFT_VOCAB, hidden),
         "d2t": d2t_values(), "t2d": t2d_values()}
    t.update(layer_tensors(layer, hidden))
    return {prefix + k if k not in ("d2t", "t2d") else k: v for k, v in t.items()}


def write_ckpt(path: Path, config: dict[str, Any] | None, tensors: dict[str, np.ndarray] | None,
               *, shards: int = 1) -> Path:
    """A checkpoint directory: config.json and model.safetensors (or N shards plus an index)."""
    path.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (path / "config.json").write_text(json.dumps(config, indent=2))
    if tensors:
        if shards == 1:
            save_file(tensors, str(path / "model.safetensors"))
        else:
            names = sorted(tensors)
            weight_map = {}
            for s in range(shards):
                part = names[s::shards]
                fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
                save_file({n: tensors[n] for n in part}, str(path / fname))
                weight_map.update({n: fname for n in part})
            (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return path


def write_target(path: Path, **over: Any) -> Path:
    cfg = target_config(**over)
    tensors = {"model.embed_tokens.weight": w(cfg["vocab_size"], cfg["hidden_size"]),
               "model.norm.weight": w(cfg["hidden_size"]), "lm_head.weight": w(cfg["vocab_size"], cfg["hidden_size"])}
    return write_ckpt(path, cfg, tensors, shards=2)


def header_len(file: Path) -> int:
    """The 8-byte little-endian header length of a safetensors file, read independently of spectui."""
    return int.from_bytes(file.read_bytes()[:8], "little")


def codes(result: Any, severity: str | None = None) -> list[str]:
    return sorted(f.code for f in result.findings if severity is None or f.severity == severity)


async def inspect_pair(tmp: Path, config: dict[str, Any] | None, tensors: dict[str, np.ndarray] | None, *,
                       target: dict[str, Any] | None = None, **kw: Any) -> Any:
    """Write a target (with `target` overrides) and a draft under tmp, then inspect them locally."""
    from spectui.core.draft import LocalReader, inspect

    write_target(tmp / "target", **(target or {}))
    write_ckpt(tmp / "draft", config, tensors)
    kw.setdefault("algorithm", "EAGLE3")
    kw.setdefault("sglang_version", "0.5.6")
    result = await inspect(LocalReader(), draft=str(tmp / "draft"), model=str(tmp / "target"), **kw)
    assert "internal-check-error" not in codes(result), result.to_json()["findings"]
    return result


def finding(result: Any, code: str) -> Any:
    found = [f for f in result.findings if f.code == code]
    assert len(found) == 1, (code, codes(result))
    return found[0]
