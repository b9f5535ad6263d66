"""Version tables behind resolve(): exact SGLang texts, architecture lists and thresholds (docs/REFERENCE.md §2).

Each table is (first version, value) pairs in ascending order; `since(table, version)` returns the value
of the last row at or below `version`. Versions are (major, minor, patch, post) tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from spectui.core.versions import Version, v

T = TypeVar("T")


def since(table: Sequence[tuple[Version, T]], version: Version, default: T) -> T:
    value = default
    for first, val in table:
        if version >= first:
            value = val
    return value


EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
BUILTIN_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO", "FROZEN_KV_MTP")

# --- exact warning texts -------------------------------------------------------------------------
MR48_SHORT = "Max running requests is reset to 48 for speculative decoding."
MR48 = ("Max running requests is reset to 48 for speculative decoding. "
        "You can override this by explicitly setting --max-running-requests.")
OVERLAP_EAGLE = "Overlap scheduler is disabled because of using eagle speculative decoding."
OVERLAP_EAGLE3_AND = "Overlap scheduler is disabled because of using eagle3 and standalone speculative decoding."
OVERLAP_EAGLE3_OR = "Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding."
BETA_SPEC_ON = "Beta spec is enabled for eagle speculative decoding and overlap schedule is turned on."
SPEC_V2_ON = "Spec v2 is enabled for eagle/eagle3 speculative decoding and overlap schedule is turned on."
SPEC_V2_OFF = ("Overlap scheduler is disabled when spec v2 is off or using unsupported speculative algorithm. "
               "You can set env SGLANG_ENABLE_SPEC_V2=True to enable the experimental overlap scheduler. ")
SPEC_V2_DEFAULT = "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."
SPEC_V1_BECAUSE = "Spec v1 is used for eagle/eagle3/standalone speculative decoding because {reason}."
CPU_OVERLAP = "Overlap schedule is not implemented for speculative decoding on CPU."
NON_OVERLAP_V2 = "Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative decoding."
MIXED_EAGLE = "Mixed chunked prefill is disabled because of using eagle speculative decoding."
MIXED_ALGO = "Mixed chunked prefill is disabled: {algo} speculative decoding does not support it."
DSMTP = "DeepSeek MTP does not require setting speculative_draft_model_path."
ADJUST = "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
TOPK_PAGE_046 = "speculative_eagle_topk is adjusted to 1 when page_size > 1"
NGRAM_OVERLAP_MIXED = ("The overlap scheduler and mixed chunked prefill are disabled because of using ngram "
                       "speculative decoding.")
NGRAM_MIXED = "The mixed chunked prefill are disabled because of using ngram speculative decoding."
NGRAM_DRAFT_DEFAULT = ("speculative_num_draft_tokens is set to {n} by default for ngram speculative decoding. "
                       "You can override this by explicitly setting --speculative-num-draft-tokens.")
IPC_DEPRECATED = "SGLANG_USE_CUDA_IPC_TRANSPORT is deprecated; use --mm-feature-transport=cpu instead."
DFLASH_STEPS = "DFLASH only supports speculative_num_steps == 1; overriding speculative_num_steps={n} to 1."
DFLASH_TOPK = "DFLASH only supports speculative_eagle_topk == 1; overriding speculative_eagle_topk={n} to 1."
DFLASH_DRAFT_DEFAULT = "speculative_num_draft_tokens is not set; defaulting to 16 for DFLASH."

# --- exact error texts ---------------------------------------------------------------------------
TYPEERROR_NONE_GT_INT = "'>' not supported between instances of 'NoneType' and 'int'"
PAGE_TOPK_OLD = ("speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results for "
                 "paged attention backends. This combination is only supported for the 'flashinfer' backend.")
PAGE_TOPK_NEW = ("speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', 'fa3', "
                 "'triton'); got attention_backend={backend!r}. Use page_size == 1 or one of those backends.")
NGRAM_PAGE_TOPK = ("speculative_eagle_topk({topk}) > 1 with page_size({page}) > 1 is unstable and produces "
                   "incorrect results for paged attention backends. This combination is only supported for "
                   "the 'flashinfer' backend.")
TRTLLM_TOPK = "trtllm_mha backend only supports topk = 1 for speculative decoding."
SPEC_V2_TOPK = "Spec v2 currently only supports topk = 1 for speculative decoding."
STANDALONE_DP = "Currently standalone speculative decoding does not support dp attention."
NGRAM_DP = "Currently ngram speculative decoding does not support dp attention."
FLEX_SPEC = "Speculative decoding is currently not supported with Flex Attention backend"
UNKNOWN_ALGO = "Unknown speculative algorithm name: {name}"
DFLASH_NO_DRAFT = "DFLASH speculative decoding requires setting --speculative-draft-model-path."
# arg_groups/deepseek_v4_hook.py (0.5.15+), run from the model-specific adjustments before the spec hook.
DSV4_MAX_RUNNING = "Setting max_running_requests to {n} for {arch}."
DSV4_ALGO = "Only EAGLE and DSPARK speculative algorithms are supported for {arch}"
DSV4_TOPK = "Only EAGLE speculative algorithm with topk == 1 is supported for {arch}"
DSV4_ARCHS = ("DeepseekV4ForCausalLM",)

# --- assumptions (spectui's words, not SGLang's) -------------------------------------------------
NO_DRAFT_UNKNOWN = ("no --speculative-draft-model-path: only a target with built-in MTP layers (DeepSeek-V3/R1, "
                    "GLM-4.5 MoE, ...) supplies its own draft, and the target architecture is unknown here "
                    "(pass --model-arch)")
NO_DRAFT_NOT_MTP = ("no --speculative-draft-model-path, and {arch} has no built-in MTP draft in this release: "
                    "there is no draft to load, so start-up fails when the draft worker starts; add "
                    "--speculative-draft-model-path")

# --- version-dependent choices -------------------------------------------------------------------
# Release boundaries seen in the recorded launches (tests/data/resolution): 0.5.15 leaves overlap on with
# --device cpu and resolves onto ServerArgs itself; 0.5.19 forces overlap off on CPU and resolves apart
# (`resolve_once`: the ServerArgs fields stay as parsed, `resolution_result` holds the values that run).
CPU_OVERLAP_SINCE = v("0.5.19")
RESOLVED_APART_SINCE = v("0.5.19")

# Where the rules run (the function in the traceback).
RAISED_AT = [(v("0.4.3"), "__post_init__"), (v("0.5.3"), "_handle_speculative_decoding"),
             (v("0.5.15"), "hook")]

# Max running requests := 48 when unset: (text or None for silent).
MR48_TEXT: list[tuple[Version, str | None]] = [(v("0.4.5"), None), (v("0.5.4"), MR48_SHORT),
                                               (v("0.5.4.post3"), MR48)]

# NGRAM on a non-CUDA device.
NGRAM_DEVICES: list[tuple[Version, tuple[tuple[str, ...], str]]] = [
    (v("0.5.3"), (("cuda",), "Ngram speculative decoding only supports CUDA device.")),
    (v("0.5.18"), (("cuda", "cpu"), "Ngram speculative decoding only supports CUDA or CPU devices.")),
    (v("0.5.23"), (("cuda", "cpu", "xpu"), "Ngram speculative decoding only supports CUDA, CPU, or XPU devices.")),
]

# Attention backends allowed with topk > 1 and page_size > 1 (None = no rule in that release).
PAGE_TOPK_BACKENDS: list[tuple[Version, tuple[str, ...] | None]] = [
    (v("0.4.9"), None), (v("0.5.2"), ("flashinfer",)), (v("0.5.6"), ("flashinfer", "fa3")),
    (v("0.5.15"), ("flashinfer", "fa3", "triton")),
]

# Targets whose checkpoint carries the MTP draft (draft path defaults to the target's).
_MTP_0_5_3 = ("DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeForCausalLM",
              "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM")
MTP_ARCHS: list[tuple[Version, tuple[str, ...]]] = [
    (v("0.4.9"), ("DeepseekV3ForCausalLM",)),
    (v("0.4.10"), ("DeepseekV3ForCausalLM", "Glm4MoeForCausalLM")),
    (v("0.5.3"), _MTP_0_5_3),
    (v("0.5.7"), _MTP_0_5_3 + ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration")),
    (v("0.5.8"), _MTP_0_5_3 + ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
                               "Glm4MoeLiteForCausalLM")),
    (v("0.5.9"), _MTP_0_5_3 + ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
                               "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM")),
    (v("0.5.12"), _MTP_0_5_3 + ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
                                "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM",
                                "DeepseekV4ForCausalLM", "HYV3ForCausalLM")),
    (v("0.5.20"), _MTP_0_5_3 + ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
                                "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM",
                                "DeepseekV4ForCausalLM", "HYV3ForCausalLM", "HYV4ForCausalLM",
                                "Qwen4ExpForConditionalGeneration")),
]
# MTP targets that do not get the "DeepSeek MTP does not require..." warning.
MTP_NO_WARN = ("MistralLarge3ForCausalLM", "PixtralForConditionalGeneration")

# Auto (num_steps, topk, num_draft_tokens) when all three are unset (docs/REFERENCE.md §2.3).
Triple = tuple[int, int, int]
_AUTO_LIST_049 = ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM")
_AUTO_LIST_053 = _AUTO_LIST_049 + ("GptOssForCausalLM", "DeepseekV32ForCausalLM", "BailingMoeForCausalLM",
                                   "BailingMoeV2ForCausalLM")
_AUTO_LIST_057 = _AUTO_LIST_053 + ("Glm4MoeForCausalLM", "MistralLarge3ForCausalLM",
                                   "PixtralForConditionalGeneration", "MiMoV2FlashForCausalLM")
_AUTO_LIST_059 = _AUTO_LIST_057 + ("Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM")
# (short list, tree default for anything else)
AUTO_PARAMS: list[tuple[Version, tuple[tuple[str, ...], Triple]]] = [
    (v("0.4.5"), ((), (5, 4, 8))),
    (v("0.4.9"), (_AUTO_LIST_049, (5, 4, 8))),
    (v("0.5.1"), (_AUTO_LIST_049 + ("GptOssForCausalLM",), (5, 4, 8))),
    (v("0.5.3"), (_AUTO_LIST_053, (5, 4, 8))),
    (v("0.5.7"), (_AUTO_LIST_057, (5, 4, 8))),
    (v("0.5.8"), (_AUTO_LIST_057 + ("Glm4MoeLiteForCausalLM",), (3, 1, 4))),
    (v("0.5.9"), (_AUTO_LIST_059, (3, 1, 4))),
    (v("0.5.11"), (_AUTO_LIST_059 + ("MiMoV2ForCausalLM",), (3, 1, 4))),
]
TREE: Triple = (5, 4, 8)
CHAIN: Triple = (3, 1, 4)


def auto_params(version: Version, algo: str, arch: str | None) -> tuple[Triple, str | None]:
    """(steps, topk, draft tokens) SGLang picks, and a note when the architecture is unknown."""
    if algo == "STANDALONE" and version >= v("0.5.2"):
        return CHAIN, None
    short_list, other = since(AUTO_PARAMS, version, ((), TREE))
    if arch is None:
        alts = {TREE: "LlamaForCausalLM / Grok1", CHAIN: "DeepSeek-V3 and other MTP targets"}
        return other, (
            f"target architecture unknown: assuming auto defaults {other} (steps, topk, draft tokens) of a "
            f"generic target; {alts[TREE]} would get {TREE}, {alts[CHAIN]} get {CHAIN} "
            "(pass --model-arch or a readable <model-path>/config.json)"
        )
    if arch in ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1ModelForCausalLM"):
        return TREE, None
    if arch in short_list:
        return CHAIN, None
    return other, None


def truthy_env(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")
