"""Will SGLang load this draft at all, and as what: class, algorithm, format, key layout, weights.

Loader facts (sgl-project/sglang python/sglang/srt/models/):
- llama.py `LlamaForCausalLM.load_weights`: a name holding `.q_proj`/`.k_proj`/`.v_proj`/`.gate_proj`/
  `.up_proj` is renamed to the fused parameter and looked up with `params_dict[name]` (a KeyError when
  absent); any other unknown name only logs `Parameter <name> not found in params_dict`.
- llama_eagle3.py `LlamaForCausalLMEagle3.load_weights`: `d2t` -> hot_token_id, `t2d` skipped, a name
  matching no parameter (with or without `model.`) is skipped silently.
"""

from __future__ import annotations

from spectui.core.draft.context import Context
from spectui.core.draft.findings import Finding
from spectui.core.draft.formats import EAGLE3_CLASSES, EAGLE3_LAYER_KEYS

_STACKED = (".q_proj", ".k_proj", ".v_proj", ".gate_proj", ".up_proj")
_FUSED = {".q_proj": ".qkv_proj", ".k_proj": ".qkv_proj", ".v_proj": ".qkv_proj",
          ".gate_proj": ".gate_up_proj", ".up_proj": ".gate_up_proj"}
EAGLE3_FIX = ('set "architectures": ["LlamaForCausalLMEagle3"] in the draft\'s config.json '
              "(Eagle3DeepseekV2ForCausalLM for DeepSeek/Kimi-style drafts)")


def check_read_problems(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    assert ctx.draft is not None
    for code, message, evidence in ctx.draft.problems:
        sev = "warning" if code == "index-mismatch" else "error"
        out.append(Finding(f"weights-{code}" if not code.startswith("weights") else code, "draft-weights", sev,
                           f"Draft weights unreadable: {message}" if sev == "error" else message, evidence,
                           "re-download or re-export the draft checkpoint; SGLang will fail to load, or load "
                           "it partly, the same files"))
    if ctx.draft.weight_format == "none":
        out.append(Finding("weights-none", "draft-weights", "error", "The draft directory has no weight files",
                           [f"{ctx.draft.path}: no *.safetensors, *.bin or weight index"],
                           "point --speculative-draft-model-path at the directory holding the weights"))
    return out


def check_architecture(ctx: Context) -> list[Finding]:
    fmt, archs, out = ctx.fmt, ctx.draft_archs, []
    ev_arch = f"config.json architectures = {ctx.dconfig.get('architectures')!r}"
    same = ctx.target_archs and archs and archs[0] == ctx.target_archs[0]
    if not archs:
        out.append(Finding("arch-none", "draft-architecture", "error",
                           "The draft config has no architectures list: SGLang picks the draft class from it",
                           [ev_arch, *fmt.why], EAGLE3_FIX if fmt.format == "sglang-eagle3" else
                           "set architectures to the SGLang draft class for this checkpoint"))
    elif fmt.mislabelled and fmt.format == "sglang-eagle3":
        ev = [ev_arch, "weights: " + ", ".join(fmt.why)]
        if same:
            ev.append(f"target config.json architectures = {ctx.target_archs} (the same class: config copied "
                      "from the target?)")
        out.append(Finding("arch-mislabelled", "draft-architecture", "error",
                           f"EAGLE-3 draft weights under the plain class {archs[0]}: {_plain_outcome(ctx)}",
                           ev, EAGLE3_FIX + "; SGLang never renames the class for EAGLE3"))
    elif fmt.mislabelled and fmt.format == "eagle":
        out.append(Finding("arch-mislabelled-eagle", "draft-architecture", "error",
                           f"EAGLE-1/2 draft weights under the plain class {archs[0]}: SGLang builds a plain "
                           "model, logs 'Parameter fc.weight not found in params_dict' and drafts without fc "
                           "(inferred)", [ev_arch, "weights: " + ", ".join(fmt.why)],
                           'set "architectures": ["LlamaForCausalLMEagle"] (Qwen2ForCausalLMEagle, '
                           "MistralForCausalLMEagle) and launch with --speculative-algorithm EAGLE"))
    elif fmt.format == "sglang-eagle3" and archs[0] not in EAGLE3_CLASSES:
        out.append(Finding("arch-unknown-eagle3", "draft-architecture", "warning",
                           f"{archs[0]} is not an EAGLE-3 draft class of upstream SGLang",
                           [ev_arch, f"SGLang 0.5.23 EAGLE-3 classes: {sorted(EAGLE3_CLASSES)}"],
                           "check that your SGLang build registers this class, or " + EAGLE3_FIX))
    if fmt.format == "sglang-eagle3" and not fmt.mislabelled and not ctx.layout.midlayer:
        fc, hidden = ctx.layout.shape("fc.weight"), ctx.dint("hidden_size")
        no_norm = not any("hidden_norm.weight" in k for k in ctx.layout.layers.values())
        if fc and hidden and fc[-1] == 2 * hidden and no_norm and not ctx.layout.has("d2t"):
            out.append(Finding("arch-eagle3-class-eagle2-weights", "draft-architecture", "error",
                               "The class says EAGLE-3 but the weights are an EAGLE-1/2 draft",
                               [ev_arch, ctx.shape_ev("fc.weight") + " = [hidden, 2*hidden]",
                                "no hidden_norm, no d2t"],
                               'use "architectures": ["LlamaForCausalLMEagle"] with --speculative-algorithm EAGLE'))
    return out


def _plain_outcome(ctx: Context) -> str:
    stacked = sorted(n for n in ctx.layout.midlayer if any(s in "." + n for s in _STACKED))
    if stacked:
        first = ctx.layout.original["midlayer." + stacked[0]]
        for s, fused in _FUSED.items():
            if s in first:
                first = first.replace(s, fused)
                break
        return (f"loading fails with KeyError: '{first}' (the first fused key the loader meets; "
                "'midlayer.self_attn.qkv_proj.weight' when attention comes first)")
    return ("SGLang loads it as an ordinary model: fc.weight and d2t are not parameters of that class "
            "and the 2*hidden-wide attention does not fit (load-time shape assertion, inferred)")


def check_algorithm(ctx: Context) -> list[Finding]:
    fam, fmt = ctx.launch.eagle_family, ctx.fmt.format
    out: list[Finding] = []
    if fam is None:
        return out
    ev_alg = f"launch --speculative-algorithm {ctx.launch.algorithm}"
    ev_arch = f"config.json architectures = {ctx.draft_archs}"
    if fmt == "sglang-eagle3" and fam == "EAGLE":
        out.append(Finding("alg-eagle3-draft-as-eagle", "draft-algorithm", "error",
                           "EAGLE-3 draft launched with EAGLE: no aux hidden states are captured, the draft "
                           "skips fc and drafts from the wrong features; accept length exactly 1.0, no warning",
                           [ev_alg, ev_arch, *ctx.fmt.why],
                           "launch with --speculative-algorithm EAGLE3"))
    elif fmt == "eagle" and fam == "EAGLE3":
        out.append(Finding("alg-eagle-draft-as-eagle3", "draft-algorithm", "error",
                           "EAGLE-1/2 draft launched with EAGLE3: the target sends 3 concatenated hidden "
                           "states into a draft built for one; a shape RuntimeError at the first draft step "
                           "(inferred)", [ev_alg, ev_arch], "launch with --speculative-algorithm EAGLE"))
    elif fmt == "mtp" and fam == "EAGLE3":
        out.append(Finding("alg-mtp-as-eagle3", "draft-algorithm", "error",
                           "An MTP/NextN draft launched with EAGLE3: MTP layers take one hidden state, not "
                           "three (inferred)", [ev_alg, ev_arch],
                           "launch with --speculative-algorithm NEXTN (SGLang's alias of EAGLE)"))
    elif fam == "STANDALONE" and fmt in ("sglang-eagle3", "eagle"):
        out.append(Finding("alg-eagle-draft-as-standalone", "draft-algorithm", "error",
                           "An EAGLE draft launched with STANDALONE, which runs the draft as an ordinary "
                           "language model without target hidden states (inferred)", [ev_alg, ev_arch],
                           "launch with --speculative-algorithm EAGLE3" if fmt == "sglang-eagle3"
                           else "launch with --speculative-algorithm EAGLE"))
    if fmt == "sglang-eagle3" and fam == "EAGLE3" and ctx.loader.has_eagle3 is False:
        out.append(Finding("alg-release-no-eagle3", "draft-algorithm", "error",
                           f"SGLang {ctx.loader.version} has no EAGLE3 (added in 0.4.5)",
                           [f"sglang version {ctx.loader.version}"], "upgrade SGLang"))
    if any(a.startswith("Gemma4") and "Assistant" in a for a in ctx.draft_archs) and fam == "EAGLE3":
        out.append(Finding("alg-gemma4-assistant-eagle3", "draft-algorithm", "error",
                           f"ValueError: {ctx.draft_archs[0]} draft requires --speculative-algorithm NEXTN or "
                           "EAGLE; EAGLE3 is not supported for this draft architecture.", [ev_alg, ev_arch],
                           "launch with --speculative-algorithm NEXTN (0.5.12+ promotes it to FROZEN_KV_MTP)"))
    return out


def check_format(ctx: Context) -> list[Finding]:
    if ctx.fmt.format == "speculators":
        c = ctx.dconfig
        layer_cfg = c.get("transformer_layer_config") if isinstance(c.get("transformer_layer_config"), dict) else {}
        ids = c.get("eagle_aux_hidden_state_layer_ids")
        fix = ("convert it for SGLang: architectures -> ['LlamaForCausalLMEagle3']; copy transformer_layer_config "
               "(hidden_size, heads, intermediate_size, rope, max_position_embeddings) to the top level with "
               "num_hidden_layers 1; keep draft_vocab_size, target_hidden_size, d2t and t2d; put the aux ids in "
               "eagle_config.eagle_aux_hidden_state_layer_ids (vLLM captures the input of layer id, SGLang "
               "the output of layer id: subtract 1); rename layers.0.* to midlayer.* for SGLang ≤0.5.11")
        ev = [f"config.json architectures = {ctx.draft_archs}"] + list(ctx.fmt.why[1:])
        if layer_cfg:
            ev.append(f"config.json transformer_layer_config.architectures = {layer_cfg.get('architectures')}")
        if ids is not None:
            ev.append(f"config.json eagle_aux_hidden_state_layer_ids = {ids}")
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                fix += f" (here: {[i - 1 for i in ids]})"

        return [Finding("format-speculators", "draft-format", "error",
                        "vLLM speculators format: SGLang has no class for it and cannot load it", ev, fix)]
    if ctx.fmt.format == "unknown" and ctx.launch.eagle_family in ("EAGLE", "EAGLE3"):
        return [Finding("format-unknown", "draft-format", "warning",
                        "Not a recognised EAGLE draft (no EAGLE class, no fc/midlayer weights)",
                        [f"config.json architectures = {ctx.draft_archs}",
                         f"{len(ctx.layout.names)} tensors"],
                        "check that --speculative-draft-model-path points at the draft, not a full model")]
    return []


def check_layout(ctx: Context) -> list[Finding]:
    """EAGLE-3 key layout and layer count against the release's loader."""
    if ctx.fmt.format != "sglang-eagle3":
        return []
    lay, ld, out = ctx.layout, ctx.loader, []
    n_cfg = ctx.dint("num_hidden_layers")
    rel = f"SGLang {ld.version}" if ld.known else "SGLang ≤0.5.11 (the release is unknown)"
    if lay.style == "layers" and ld.loads_layers_keys is not True:
        sample = ctx.where(sorted(k for k in lay.names if k.startswith("layers."))[0])
        out.append(Finding("layout-layers-on-old-loader", "draft-format", "error" if ld.known else "warning",
                           f"Decoder weights are keyed layers.N.*; {rel} only loads midlayer.* and skips them "
                           "silently: the draft runs on random weights (accept length ≈ 1.0, no load error)",
                           [sample, f"layers in weights: {sorted(lay.layers)}"],
                           "rename layers.0.* to midlayer.* (keep any model. prefix), or run SGLang ≥0.5.12, "
                           "which rewrites midlayer -> layers.0 and loads both"))
    elif lay.style == "mixed":
        out.append(Finding("layout-mixed", "draft-format", "warning",
                           "Both midlayer.* and layers.N.* keys: SGLang ≥0.5.12 rewrites midlayer to layers.0 "
                           "(one copy overwrites the other); ≤0.5.11 ignores layers.N.*",
                           [ctx.where("midlayer." + sorted(lay.midlayer)[0]), f"layers: {sorted(lay.layers)}"],
                           "keep one copy of the decoder layer"))
    if n_cfg is not None and n_cfg != 1 and ld.max_layers == 1:
        out.append(Finding("config-layers-unsupported", "draft-config", "error",
                           f"ValueError: EAGLE3 currently only supports 1 layer ({rel}; num_hidden_layers "
                           f"= {n_cfg})", [f"config.json num_hidden_layers = {n_cfg}"],
                           "use SGLang ≥0.5.12 for multi-layer EAGLE-3 drafts, or a 1-layer draft"))
    elif n_cfg is not None and n_cfg != 1 and not ld.known:
        out.append(Finding("config-layers-release", "draft-config", "warning",
                           f"A {n_cfg}-layer EAGLE-3 draft: SGLang ≤0.5.11 refuses it (ValueError: EAGLE3 "
                           "currently only supports 1 layer); 0.5.12+ builds num_hidden_layers layers",
                           [f"config.json num_hidden_layers = {n_cfg}"], "run SGLang ≥0.5.12"))
    weight_layers = set(lay.layers) | ({0} if lay.midlayer else set())
    if n_cfg and weight_layers and ld.loads_layers_keys is not False:
        extra = sorted(i for i in weight_layers if i >= n_cfg)
        missing = sorted(i for i in range(n_cfg) if i not in weight_layers)
        if missing:
            out.append(Finding("weights-layers-missing", "draft-weights", "error",
                               f"config.json says {n_cfg} layers but the weights have none for layer(s) "
                               f"{missing}: they run on random weights", [f"config.json num_hidden_layers = "
                               f"{n_cfg}", f"decoder layers in weights: {sorted(weight_layers)}"],
                               "set num_hidden_layers to the number of layers the checkpoint holds"))
        if extra:
            out.append(Finding("weights-layers-extra", "draft-weights", "warning",
                               f"Weights for layer(s) {extra} beyond num_hidden_layers = {n_cfg}: SGLang skips "
                               "them silently", [f"decoder layers in weights: {sorted(weight_layers)}"],
                               "set num_hidden_layers to match the checkpoint"))
    return out


def check_weights(ctx: Context) -> list[Finding]:
    """Tensors an EAGLE-3 draft needs, from the names (shapes are checked in checks_fit)."""
    if ctx.fmt.format != "sglang-eagle3" or not ctx.layout.names:
        return []
    lay, out = ctx.layout, []
    if not lay.has("fc.weight"):
        out.append(Finding("weights-no-fc", "draft-weights", "error",
                           "No fc.weight: the layer that fuses the target's hidden states keeps random weights",
                           [f"{len(lay.names)} tensors, none named fc.weight"], "re-export the draft with fc"))
    first = lay.midlayer if (lay.midlayer and ctx.loader.loads_layers_keys is not True) or not lay.layers \
        else lay.layers.get(0, set())
    prefix = "midlayer." if first is lay.midlayer else "layers.0."
    missing = [k for k in EAGLE3_LAYER_KEYS if k not in first and not _fused_present(k, first)]
    if (lay.midlayer or lay.layers) and missing:
        out.append(Finding("weights-layer-incomplete", "draft-weights", "error",
                           f"The draft's decoder layer lacks {len(missing)} tensor(s); they stay random",
                           [f"missing: {prefix}{m}" for m in missing[:6]], "re-export the full draft layer"))
    elif not (lay.midlayer or lay.layers):
        out.append(Finding("weights-no-layer", "draft-weights", "error",
                           "No decoder layer weights (midlayer.* or layers.0.*)",
                           [f"{len(lay.names)} tensors: {sorted(lay.names)[:5]}"], "re-export the draft"))
    tied = bool(ctx.dconfig.get("tie_word_embeddings"))
    if not tied and ctx.dconfig.get("draft_vocab_size") is not None and not lay.has("lm_head.weight"):
        out.append(Finding("weights-no-lm-head", "draft-weights", "error",
                           "No lm_head.weight although draft_vocab_size is set: the draft head stays random "
                           "(accept len 1.00, accept rate 0.00, cf. sgl-project/sglang PR #27908)",
                           [f"config.json draft_vocab_size = {ctx.dconfig.get('draft_vocab_size')}",
                            "config.json tie_word_embeddings = false", "no tensor lm_head.weight"],
                           "re-export with lm_head, or set draft_vocab_size to null to use the target's head"))
    if not lay.has("norm.weight"):
        out.append(Finding("weights-no-norm", "draft-weights", "warning",
                           "No norm.weight: the final norm keeps its initial weights",
                           ["no tensor norm.weight"], "re-export the draft with its final norm"))
    known = {"fc.weight", "fc.bias", "norm.weight", "lm_head.weight", "embed_tokens.weight", "d2t", "t2d"}
    skipped = sorted(n for n in lay.names if n not in known and not n.startswith(("midlayer.", "layers.", "fc_norm.")))
    if skipped:
        out.append(Finding("weights-skipped", "draft-weights", "info",
                           f"{len(skipped)} tensor(s) match no draft parameter; SGLang skips them silently",
                           [ctx.where(n) for n in skipped[:5]], "none needed if they are training leftovers"))
    return out


def _fused_present(key: str, present: set[str]) -> bool:
    for s, fused in _FUSED.items():
        if s[1:] + "." in key:
            return key.replace(s[1:], fused[1:]) in present
    return False


_INT_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "max_position_embeddings", "intermediate_size",
             "num_attention_heads", "num_key_value_heads")
_INT_OR_NULL_KEYS = ("draft_vocab_size", "target_hidden_size")


def check_config_types(ctx: Context) -> list[Finding]:
    """Sizes SGLang does arithmetic with must be integers (a string "4096" fails deep inside model init)."""
    c, bad = ctx.dconfig, []
    for key in _INT_KEYS + _INT_OR_NULL_KEYS:
        if key not in c or (c[key] is None and key in _INT_OR_NULL_KEYS):
            continue
        if not isinstance(c[key], int) or isinstance(c[key], bool):
            bad.append(f"config.json {key} = {c[key]!r}")
    if not bad:
        return []
    return [Finding("config-not-integer", "draft-config", "error",
                    f"{len(bad)} size field(s) in the draft config.json are not integers", bad,
                    "write the sizes as JSON integers (4096, not \"4096\")")]
