"""Does the draft fit its target: hidden sizes, vocabulary maps, aux layers, context, dtype and rope.

Facts (sgl-project/sglang python/sglang/srt/models/):
- llama_eagle3.py LlamaModel: `hidden_size_in = target_hidden_size` if the config has it, else
  hidden_size; `fc = Linear(hidden_size_in * 3, hidden_size)`; the first layer's qkv_proj reads
  2 * hidden_size (embeddings ++ hidden state); lm_head has draft_vocab_size rows (None -> the
  target's head); `hot_token_id = d2t + arange(len(d2t))`, t2d is skipped.
- llama.py set_eagle3_layers_to_capture: ids -> layers_to_capture = [id + 1 ...]; none -> [2, N//2, N-3].
"""

from __future__ import annotations

from collections import Counter

from spectui.core.draft.context import Context
from spectui.core.draft.findings import Finding
from spectui.core.draft.formats import aux_layer_ids
from spectui.core.draft.releases import default_aux_ids, default_capture


def check_hidden_size(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    h, ht_cfg, th = ctx.dint("hidden_size"), ctx.dint("target_hidden_size"), ctx.tint("hidden_size")
    if ctx.fmt.format == "eagle":
        if h and th and h != th:
            out.append(Finding("hidden-eagle-mismatch", "draft-hidden-size", "error",
                               f"EAGLE draft hidden_size {h} ≠ target hidden_size {th}",
                               [f"draft config.json hidden_size = {h}", f"target config.json hidden_size = {th}"],
                               "use a draft trained for this target"))
        return out
    if ctx.fmt.format != "sglang-eagle3":
        return out
    ht = ht_cfg or h
    fc = ctx.layout.shape("fc.weight")
    if fc and len(fc) == 2 and h and fc[0] != h:
        out.append(Finding("hidden-fc-rows", "draft-hidden-size", "error",
                           f"fc.weight has {fc[0]} rows but hidden_size is {h}: load fails with AssertionError: "
                           "Attempted to load weight ... into parameter ...",
                           [ctx.shape_ev("fc.weight"), f"config.json hidden_size = {h}"],
                           "set hidden_size to the checkpoint's width"))
    if th and ht and th != ht:
        ev = [f"target config.json hidden_size = {th}", f"draft config.json hidden_size = {h}"]
        ev.append(f"draft config.json target_hidden_size = {ht_cfg}" if ht_cfg else
                  "draft config.json has no target_hidden_size")
        if fc:
            ev.append(ctx.shape_ev("fc.weight"))
        fix = (f'set "target_hidden_size": {th} in the draft config.json' if fc and fc[-1] % th == 0
               and fc[-1] // th in (2, 3, 4, 5) else "use a draft trained for this target")
        out.append(Finding("hidden-target-mismatch", "draft-hidden-size", "error",
                           f"The target's hidden states are {th} wide but the draft expects {ht}: a shape "
                           "error at load (fc.weight) or at the first draft step", ev, fix))
    q = ctx.layout.shape("midlayer.self_attn.q_proj.weight") or ctx.layout.shape("layers.0.self_attn.q_proj.weight")
    if q and len(q) == 2 and h and q[1] != 2 * h:
        name = "midlayer.self_attn.q_proj.weight" if ctx.layout.has("midlayer.self_attn.q_proj.weight") \
            else "layers.0.self_attn.q_proj.weight"
        out.append(Finding("hidden-qkv-width", "draft-hidden-size", "error",
                           f"The first draft layer's q_proj reads {q[1]} features; EAGLE-3 needs 2 × hidden_size "
                           f"= {2 * h}: load-time AssertionError", [ctx.shape_ev(name),
                                                                   f"config.json hidden_size = {h}"],
                           "check hidden_size in the draft config.json"))
    return out


def expected_aux_count(ctx: Context, ids: list[int] | None) -> int | None:
    """How many hidden states SGLang's fc takes: 3 on ≤0.5.11, else num_aux_hidden_states / len(ids)."""
    if ctx.loader.fc_three:
        return 3
    n = ctx.dint("num_aux_hidden_states")
    if n:
        return n
    if ctx.loader.known:
        return len(ids) if ids else 3
    return None


def check_aux_layers(ctx: Context) -> list[Finding]:
    if ctx.fmt.format not in ("sglang-eagle3", "speculators"):
        return []
    out: list[Finding] = []
    ids, where = aux_layer_ids(ctx.dconfig)
    n = ctx.tint("num_hidden_layers")
    ht = ctx.dint("target_hidden_size") or ctx.dint("hidden_size")
    fc = ctx.layout.shape("fc.weight")
    if ctx.fmt.format == "sglang-eagle3":
        out += _aux_source(ctx, ids, where, n)
    if fc and ht and len(fc) == 2 and fc[-1] % ht == 0:
        k = fc[-1] // ht
        want = expected_aux_count(ctx, ids if where and where.startswith("eagle_config") else None)
        if ids is not None and k != len(ids):
            out.append(Finding("aux-count-fc", "draft-aux-layers", "error",
                               f"fc.weight takes {k} hidden states but {where} lists {len(ids)}",
                               [ctx.shape_ev("fc.weight") + f" = [hidden, {k} × {ht}]", f"config.json {where} = {ids}"],
                               "list exactly the layers the draft was trained on"))
        elif want is not None and k != want:
            out.append(Finding("aux-count-release", "draft-aux-layers", "error",
                               f"fc.weight takes {k} hidden states; SGLang {ctx.loader.version or ''} builds fc for "
                               f"{want}: AssertionError: Attempted to load weight (torch.Size([{fc[0]}, {fc[1]}])) "
                               f"into parameter (torch.Size([{fc[0]}, {want * ht}]))",
                               [ctx.shape_ev("fc.weight")], "use SGLang ≥0.5.12 (num_aux_hidden_states) or a "
                               "3-layer draft"))
    if ids is not None and not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        out.append(Finding("aux-not-integers", "draft-aux-layers", "error",
                           f"Aux layer ids {ids} are not all integers: SGLang's `id + 1` fails at start-up",
                           [f"config.json {where} = {ids}"], "write the layer ids as JSON integers"))
        return out
    if ids is None or n is None:
        return out
    bad = [i for i in ids if i < -1 or i + 1 >= n]
    if bad:
        out.append(Finding("aux-out-of-range", "draft-aux-layers", "error",
                           f"Aux layer id(s) {bad} are outside the target's {n} layers: SGLang captures layer "
                           "id + 1, which never runs, so fewer hidden states reach fc (shape RuntimeError)",
                           [f"config.json {where} = {ids}", f"target config.json num_hidden_layers = {n}"],
                           f"ids must be in 0..{n - 2} for this target; is the draft for another model?"))
    if -1 in ids:
        out.append(Finding("aux-embedding", "draft-aux-layers", "warning",
                           "Aux id -1 captures the embedding output (input of layer 0); not every SGLang target "
                           "model supports capture there", [f"config.json {where} = {ids}"],
                           "check the target model's capture code handles layer 0"))
    dup = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dup:
        out.append(Finding("aux-duplicate", "draft-aux-layers", "warning", f"Aux layer id(s) {dup} listed twice",
                           [f"config.json {where} = {ids}"], "list each trained layer once"))
    if where and where.startswith("eagle_config") and not bad:
        out += _aux_convention(ctx, ids, n, where)
    return out


def _aux_source(ctx: Context, ids: list[int] | None, where: str | None, n: int | None) -> list[Finding]:
    default = f"ids {default_aux_ids(n)}, capturing layers {default_capture(n)}" if n else \
        "[1, N//2-1, N-4] for an N-layer target"
    if ids is None:
        return [Finding("aux-no-eagle-config", "draft-aux-layers", "warning",
                        f"No eagle_config.eagle_aux_hidden_state_layer_ids: SGLang silently uses its default "
                        f"layers ({default}); right only if the draft was trained on them",
                        ["config.json has no eagle_config"], 'add "eagle_config": {"eagle_aux_hidden_state_layer_ids":'
                        ' [...]} with the layers used in training (as output-of-layer ids)')]
    if where == "eagle_aux_hidden_state_layer_ids":
        same = n is not None and list(ids) == default_capture(n)
        return [Finding("aux-top-level", "draft-aux-layers", "info" if same else "warning",
                        "Aux ids at the top level (vLLM's place) are not what SGLang reads: it uses "
                        f"eagle_config and falls back to its default ({default})"
                        + ("; these ids in vLLM's convention are the same layers" if same else ""),
                        [f"config.json eagle_aux_hidden_state_layer_ids = {ids}", "config.json has no eagle_config"],
                        "move them to eagle_config.eagle_aux_hidden_state_layer_ids, minus 1 each (vLLM captures "
                        "the input of layer id, SGLang the output)")]
    return []


def _aux_convention(ctx: Context, ids: list[int], n: int, where: str) -> list[Finding]:
    out: list[Finding] = []
    ev = [f"config.json {where} = {ids}", f"target config.json num_hidden_layers = {n}"]
    if ids == default_capture(n) and ids != default_aux_ids(n):
        out.append(Finding("aux-convention", "draft-aux-layers", "warning",
                           f"{ids} are the default layers in the input-of-layer convention (vLLM, speculators); "
                           f"SGLang adds 1 and captures {[i + 1 for i in ids]}, one layer later than that "
                           "convention's training (cf. sgl-project/sglang PR #25454)", ev,
                           f"if the draft was trained by a tool using that convention, use {default_aux_ids(n)}"))
    custom = ids != default_aux_ids(n)
    if custom and ctx.loader.aux_ids == "eager-only":
        out.append(Finding("aux-cuda-graph", "draft-aux-layers", "warning",
                           f"SGLang {ctx.loader.version} applies custom aux ids only on eager paths: CUDA-graph "
                           f"decode captures the default {default_capture(n)} (accept length near 1.0 with graphs)",
                           ev, "upgrade to SGLang ≥0.5.11, or compare with --disable-cuda-graph"))
    elif custom and ctx.loader.aux_ids == "ignored":
        out.append(Finding("aux-ignored", "draft-aux-layers", "warning",
                           f"SGLang {ctx.loader.version} ignores aux ids and captures {default_capture(n)}",
                           ev, "upgrade to SGLang ≥0.5.11"))
    return out


def check_context(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    dm, tm = ctx.dint("max_position_embeddings"), ctx.tint("max_position_embeddings")
    if dm and tm and dm < tm:
        out.append(Finding("context-below-target", "draft-context-length", "warning",
                           f"The draft's max_position_embeddings {dm} is below the target's {tm}: past {dm} "
                           "tokens the draft runs beyond its trained positions and acceptance drops",
                           [f"draft config.json max_position_embeddings = {dm}",
                            f"target config.json max_position_embeddings = {tm}"],
                           f"cap --context-length at {dm}, or use a draft trained for longer contexts"))
    p = ctx.launch.max_prompt_len
    if dm and p:
        need = p + (ctx.launch.draft_tokens or 0)
        if need > dm:
            out.append(Finding("context-prompts-beyond-draft", "draft-context-length", "error",
                               f"Prompts of {p} tokens (+{ctx.launch.draft_tokens or 0} draft tokens) go past the "
                               f"draft's max_position_embeddings {dm}",
                               [f"draft config.json max_position_embeddings = {dm}", f"longest prompt seen = {p}"],
                               "use a long-context draft, or keep prompts under the draft's limit"))
    return out


def check_dtype_rope(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    if ctx.tconfig is None:
        return out
    dd, td = ctx.d("torch_dtype") or ctx.d("dtype"), ctx.t("torch_dtype") or ctx.t("dtype")
    if dd and td and dd != td:
        out.append(Finding("config-dtype", "draft-config", "warning" if dd == "float32" else "info",
                           f"Draft dtype {dd}, target dtype {td}",
                           [f"draft config.json torch_dtype = {dd}", f"target config.json torch_dtype = {td}"],
                           "a float32 draft takes twice the memory and time; export it in the target's dtype"
                           if dd == "float32" else "none needed unless the draft was trained in the target's dtype"))
    for key in ("rope_theta", "rope_scaling"):
        dv, tv = ctx.d(key), ctx.t(key)
        if dv is not None and tv is not None and dv != tv:
            out.append(Finding(f"config-{key.replace('_', '-')}", "draft-config", "warning",
                               f"Draft {key} differs from the target's",
                               [f"draft config.json {key} = {dv}", f"target config.json {key} = {tv}"],
                               f"train or export the draft with the target's {key}"))
        elif key == "rope_scaling" and tv is not None and dv is None and ctx.fmt.format != "mtp":
            out.append(Finding("config-rope-scaling-missing", "draft-config", "warning",
                               "The target scales rope but the draft does not: long prompts drift apart",
                               [f"target config.json rope_scaling = {tv}", "draft config.json rope_scaling = null"],
                               "copy the target's rope_scaling into the draft config if it was trained with it"))
    return out
