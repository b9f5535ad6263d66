"""Which kind of draft a checkpoint is, from its config.json and its tensor names.

Class names are SGLang's (docs/REFERENCE.md §5.1, 0.5.23): the EAGLE-3 draft classes, the EAGLE/EAGLE-2
ones, the MTP targets whose draft is built in, and vLLM speculators' classes (SGLang has none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spectui.core.draft.checkpoint import TensorRef

EAGLE3_CLASSES = frozenset({"LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM"})
EAGLE_CLASSES = frozenset({"LlamaForCausalLMEagle", "Qwen2ForCausalLMEagle", "MistralForCausalLMEagle"})
SPECULATORS_CLASSES = frozenset({"Eagle3Speculator", "EagleSpeculator"})
# Targets whose MTP/NextN draft SGLang builds from the target checkpoint itself (union over releases, §2.3).
MTP_TARGETS = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
    "HYV3ForCausalLM", "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration", "Qwen3NextForCausalLM",
    "MiMoForCausalLM",
})
# The submodule names of one EAGLE-3 decoder layer (the first layer has hidden_norm and a 2*H-wide qkv).
EAGLE3_LAYER_KEYS = (
    "input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)
_LAYER = re.compile(r"^layers\.(\d+)\.(.+)$")


def arch_of(config: Mapping[str, Any]) -> list[str]:
    archs = config.get("architectures")
    return [str(a) for a in archs] if isinstance(archs, list) else []


def cfg(config: Mapping[str, Any] | None, key: str) -> Any:
    """config[key], else the same key in text_config / language_config (multimodal targets)."""
    if not config:
        return None
    if config.get(key) is not None:
        return config[key]
    for sub in ("text_config", "language_config", "transformer_layer_config"):
        inner = config.get(sub)
        if isinstance(inner, dict) and inner.get(key) is not None:
            return inner[key]
    return None


@dataclass
class Layout:
    """The draft's tensor names, normalised as SGLang's EAGLE-3 loader sees them (no `model.` prefix)."""

    names: dict[str, TensorRef]  # normalised name -> where it is
    original: dict[str, str]  # normalised name -> the name in the checkpoint
    style: str = "none"  # "midlayer", "layers", "mixed" or "none"
    layers: dict[int, set[str]] = field(default_factory=dict)  # decoder layer -> sub-keys present
    midlayer: set[str] = field(default_factory=set)  # sub-keys under midlayer.*

    def shape(self, name: str) -> tuple[int, ...] | None:
        ref = self.names.get(name)
        return ref.info.shape if ref is not None and ref.info is not None else None

    def has(self, name: str) -> bool:
        return name in self.names

    @property
    def shapes_known(self) -> bool:
        return any(r.info is not None for r in self.names.values())


def key_layout(tensors: Mapping[str, TensorRef]) -> Layout:
    names: dict[str, TensorRef] = {}
    original: dict[str, str] = {}
    for name, ref in tensors.items():
        norm = name[len("model."):] if name.startswith("model.") else name
        names[norm] = ref
        original[norm] = name
    out = Layout(names, original)
    for name in names:
        if name.startswith("midlayer."):
            out.midlayer.add(name[len("midlayer."):])
        elif m := _LAYER.match(name):
            out.layers.setdefault(int(m.group(1)), set()).add(m.group(2))
    if out.midlayer and out.layers:
        out.style = "mixed"
    elif out.midlayer:
        out.style = "midlayer"
    elif out.layers:
        out.style = "layers"
    return out


@dataclass(frozen=True)
class FormatInfo:
    format: str  # one of findings.FORMATS
    declared: str | None  # architectures[0]
    source: str  # "architectures", "weights", "config" or "none": what the format was told from
    mislabelled: bool = False  # the weights are a draft's but the class is a plain model's
    why: tuple[str, ...] = ()


def eagle3_signature(layout: Layout, config: Mapping[str, Any]) -> list[str]:
    """Reasons the weights look like an EAGLE-3 draft (empty when they do not)."""
    why: list[str] = []
    if layout.midlayer:
        why.append("midlayer.* keys")
    if any("hidden_norm.weight" in keys for keys in layout.layers.values()):
        why.append("layers.N.hidden_norm.weight (EAGLE-3 layer)")
    if layout.has("d2t"):
        why.append("d2t tensor")
    fc = layout.shape("fc.weight")
    if fc and len(fc) == 2 and fc[1] != 2 * fc[0]:  # EAGLE-1/2 fuse [embedding, hidden]: exactly 2*H wide
        why.append(f"fc.weight {list(fc)} (concatenated target hidden states, not 2*hidden)")
    return why if (layout.has("fc.weight") and why) else []


def eagle_signature(layout: Layout, config: Mapping[str, Any]) -> list[str]:
    """Reasons the weights look like an EAGLE-1/2 draft: fc from 2*H, layers.0.*, no hidden_norm."""
    fc, hidden = layout.shape("fc.weight"), cfg(config, "hidden_size")
    if not layout.has("fc.weight") or not layout.layers or eagle3_signature(layout, config):
        return []
    if fc and isinstance(hidden, int) and fc[-1] != 2 * hidden:
        return []
    return ["fc.weight" + (f" {list(fc)}" if fc else ""), "layers.N.* without hidden_norm"]


def recognise(config: Mapping[str, Any], layout: Layout) -> FormatInfo:
    archs = arch_of(config)
    arch = archs[0] if archs else None
    if (arch in SPECULATORS_CLASSES or (arch or "").endswith("Speculator")
            or "speculators_config" in config or "speculators_model_type" in config):
        keys = [k for k in ("speculators_config", "speculators_model_type") if k in config]
        return FormatInfo("speculators", arch, "config" if keys else "architectures",
                          why=tuple([f"architectures = {archs}"] + [f"config.json has {k}" for k in keys]))
    if arch and (arch in EAGLE3_CLASSES or "Eagle3" in arch):
        return FormatInfo("sglang-eagle3", arch, "architectures", why=(f"architectures = {archs}",))
    if arch and (arch in EAGLE_CLASSES or arch.endswith("Eagle")):
        return FormatInfo("eagle", arch, "architectures", why=(f"architectures = {archs}",))
    if arch and (arch.endswith(("NextN", "MTP")) or arch in MTP_TARGETS) and _mtp_layers(config):
        return FormatInfo("mtp", arch, "config", why=(f"num_nextn_predict_layers = {_mtp_layers(config)}",))
    why3 = eagle3_signature(layout, config)
    if why3:
        return FormatInfo("sglang-eagle3", arch, "weights", mislabelled=arch is not None, why=tuple(why3))
    why2 = eagle_signature(layout, config)
    if why2:
        return FormatInfo("eagle", arch, "weights", mislabelled=arch is not None, why=tuple(why2))
    return FormatInfo("unknown", arch, "none" if arch is None else "architectures",
                      why=(f"architectures = {archs}",))


def _mtp_layers(config: Mapping[str, Any]) -> int:
    n = cfg(config, "num_nextn_predict_layers")
    if n is None:
        n = cfg(config, "mtp_num_hidden_layers")
    return n if isinstance(n, int) and n > 0 else 0


def mtp_layers(config: Mapping[str, Any] | None) -> int:
    """How many MTP/NextN layers a target config declares (0 when none)."""
    return _mtp_layers(config) if config else 0


def aux_layer_ids(config: Mapping[str, Any]) -> tuple[list[int] | None, str | None]:
    """(ids, where): SGLang reads eagle_config.eagle_aux_hidden_state_layer_ids; the top level is vLLM's place."""
    ec = config.get("eagle_config")
    if isinstance(ec, dict) and isinstance(ec.get("eagle_aux_hidden_state_layer_ids"), list):
        return list(ec["eagle_aux_hidden_state_layer_ids"]), "eagle_config.eagle_aux_hidden_state_layer_ids"
    if isinstance(config.get("eagle_aux_hidden_state_layer_ids"), list):
        return list(config["eagle_aux_hidden_state_layer_ids"]), "eagle_aux_hidden_state_layer_ids"
    return None, None
