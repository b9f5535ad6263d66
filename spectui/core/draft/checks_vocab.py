"""Vocabulary: draft vs target vocab, draft_vocab_size vs lm_head, the d2t/t2d maps; MTP weights.

SGLang (llama_eagle3.py): `hot_token_id = d2t + arange(len(d2t))` maps draft index i to target id
i + d2t[i]; t2d (a bool mask over the target vocabulary) is skipped. Without d2t a reduced-vocabulary
head's indices are read as target ids.
"""

from __future__ import annotations

from spectui.core.draft.context import Context
from spectui.core.draft.findings import Finding
from spectui.core.draft.formats import mtp_layers

_CAT = "draft-vocab-map"


def check_vocab(ctx: Context) -> list[Finding]:
    if ctx.fmt.format not in ("sglang-eagle3", "eagle"):
        return []
    out: list[Finding] = []
    v, tv = ctx.dint("vocab_size"), ctx.tint("vocab_size")
    if v and tv and v != tv:
        out.append(Finding("vocab-target-mismatch", _CAT, "error",
                           f"Draft vocab_size {v} ≠ target vocab_size {tv}: the draft was trained for another "
                           "tokenizer, or its config is wrong (SGLang shares the target's embedding)",
                           [f"draft config.json vocab_size = {v}", f"target config.json vocab_size = {tv}"],
                           "use a draft trained for this target"))
    if ctx.fmt.format != "sglang-eagle3":
        return out
    c, lay = ctx.dconfig, ctx.layout
    tied = bool(c.get("tie_word_embeddings"))
    dv = ctx.dint("draft_vocab_size")
    if "draft_vocab_size" not in c and not tied:
        out.append(Finding("config-no-draft-vocab-size", "draft-config", "warning",
                           "No draft_vocab_size key: releases that read config.draft_vocab_size directly raise "
                           "AttributeError (inferred); the others use the target's lm_head",
                           ["config.json has no draft_vocab_size", "config.json tie_word_embeddings = false"],
                           'set "draft_vocab_size" to lm_head.weight\'s row count (or null for the target head)'))
    head = lay.shape("lm_head.weight")
    if head and dv and head[0] != dv:
        out.append(Finding("vocab-lm-head-rows", _CAT, "error",
                           f"lm_head.weight has {head[0]} rows but draft_vocab_size is {dv}: AssertionError: "
                           "Attempted to load weight ... into parameter ... at load",
                           [ctx.shape_ev("lm_head.weight"), f"config.json draft_vocab_size = {dv}"],
                           f"set draft_vocab_size to {head[0]}"))
    full = v or tv
    if dv and full and dv < full and lay.names and not lay.has("d2t"):
        out.append(Finding("vocab-no-d2t", _CAT, "error",
                           f"A {dv}-token draft head without d2t: SGLang reads draft indices as target ids, "
                           "silently (accept length ≈ 1.0)",
                           [f"config.json draft_vocab_size = {dv}", f"config.json vocab_size = {v}",
                            "no tensor d2t"], "re-export the draft with its d2t tensor"))
    if lay.has("d2t"):
        out += _check_d2t(ctx, dv, tv or v)
    if lay.has("t2d"):
        out += _check_t2d(ctx, dv, tv or v)
    return out


def _check_d2t(ctx: Context, dv: int | None, target_vocab: int | None) -> list[Finding]:
    out: list[Finding] = []
    shape = ctx.layout.shape("d2t")
    n = shape[0] if shape and len(shape) == 1 else None
    if shape is not None and dv and (len(shape) != 1 or shape[0] != dv):
        out.append(Finding("vocab-d2t-length", _CAT, "error",
                           f"d2t has shape {list(shape)} but draft_vocab_size is {dv}",
                           [ctx.shape_ev("d2t"), f"config.json draft_vocab_size = {dv}"],
                           "d2t must hold one offset per draft token; re-export the map with the head"))
    d2t = ctx.d2t
    if d2t is None:
        return out
    ids = [i + off for i, off in enumerate(d2t)]
    if target_vocab:
        bad = [(i, t) for i, t in enumerate(ids) if t < 0 or t >= target_vocab]
        if bad:
            i, t = bad[0]
            out.append(Finding("vocab-d2t-range", _CAT, "error",
                               f"{len(bad)} d2t entries map outside the target vocabulary (0..{target_vocab - 1})",
                               [f"d2t[{i}] = {d2t[i]} -> target id {t}", f"target vocab_size = {target_vocab}"],
                               "the map belongs to another vocabulary; re-export it for this target"))
    dup = len(ids) - len(set(ids))
    if dup:
        out.append(Finding("vocab-d2t-duplicates", _CAT, "error",
                           f"{dup} draft tokens map to a target id already taken: the d2t map is corrupt",
                           [ctx.where("d2t") + f" ({len(ids)} entries, {len(set(ids))} distinct target ids)"],
                           "regenerate d2t together with the lm_head it was trained with"))
    if n and target_vocab and n < target_vocab and all(o == 0 for o in d2t):
        out.append(Finding("vocab-d2t-identity", _CAT, "warning",
                           f"d2t is all zeros: draft token i is target token i, i.e. the hot vocabulary is the "
                           f"first {n} target ids — rarely what a trained map looks like",
                           [ctx.where("d2t") + " = [0, 0, ...]"],
                           "check the map was saved (an unsaved map collapses acceptance)"))
    return out


def _check_t2d(ctx: Context, dv: int | None, target_vocab: int | None) -> list[Finding]:
    out: list[Finding] = []
    shape = ctx.layout.shape("t2d")
    if shape and target_vocab and (len(shape) != 1 or shape[0] != target_vocab):
        out.append(Finding("vocab-t2d-length", _CAT, "warning",
                           f"t2d has shape {list(shape)}, not [target vocab_size {target_vocab}] (SGLang ignores "
                           "t2d, but it says the map was built for another vocabulary)",
                           [ctx.shape_ev("t2d"), f"vocab_size = {target_vocab}"], "check d2t against the target"))
    t2d = ctx.t2d
    if t2d is None:
        return out
    total = sum(1 for x in t2d if x)
    if dv and total != dv:
        out.append(Finding("vocab-t2d-sum", _CAT, "warning",
                           f"t2d marks {total} target tokens but draft_vocab_size is {dv} (SGLang ignores t2d)",
                           [ctx.where("t2d") + f" sum = {total}", f"config.json draft_vocab_size = {dv}"],
                           "d2t and t2d come from different exports; check d2t"))
    elif ctx.d2t is not None:
        marked = {i for i, x in enumerate(t2d) if x}
        mapped = {i + off for i, off in enumerate(ctx.d2t)}
        if marked != mapped:
            out.append(Finding("vocab-t2d-d2t-disagree", _CAT, "warning",
                               f"d2t and t2d disagree on {len(marked ^ mapped)} target ids (SGLang uses d2t)",
                               [ctx.where("d2t"), ctx.where("t2d")], "regenerate both maps from one export"))
    return out


def check_mtp(ctx: Context) -> list[Finding]:
    """MTP/NextN: the draft is layers inside the target checkpoint; check they are there."""
    if ctx.fmt.format != "mtp" or ctx.draft is None:
        return []
    n_mtp, n = mtp_layers(ctx.dconfig), ctx.dint("num_hidden_layers")
    if n_mtp == 0:
        return [Finding("mtp-none", "draft-missing", "error",
                        f"No draft path, and the target ({ctx.draft_archs}) declares no MTP layers",
                        ["config.json num_nextn_predict_layers is absent or 0"],
                        "use a checkpoint with its MTP layers, or give --speculative-draft-model-path")]
    names = ctx.draft.tensors
    present = any(".eh_proj." in k or ".enorm." in k or k.startswith("mtp.") or ".mtp." in k for k in names)
    if n is not None:
        present = present or any(k.startswith((f"model.layers.{n}.", f"layers.{n}.")) for k in names)
    if names and not present:
        return [Finding("mtp-weights-missing", "draft-weights", "error",
                        f"config.json declares {n_mtp} MTP layer(s) but the checkpoint has no MTP weights "
                        "(stripped by a quantised or converted export?)",
                        [f"config.json num_nextn_predict_layers = {n_mtp}",
                         f"{ctx.draft.index_file or 'weights'}: no eh_proj/enorm or layers.{n}.* tensors"],
                        "use a checkpoint that keeps the MTP layers, or launch without speculative decoding")]
    return []
