"""The ordered rule run behind resolve(): SGLang's speculative-argument handling, step by step, per release.

The order of the steps is SGLang's own (it decides which warnings print before an exception). Texts and
version tables live in resolve_rules.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from spectui.core.launch import resolution as R
from spectui.core.versions import Version, v

IPC_DEPRECATED = R.IPC_DEPRECATED


class RuleRaised(Exception):
    """SGLang raises `type_(message)` at this point of the resolution."""

    def __init__(self, type_: str, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.type, self.message, self.where = type_, message, where


class ResolutionRun:
    """One resolution run: the values being resolved, the warnings logged so far."""

    def __init__(self, ver: Version, st: dict[str, Any], warnings: list[str], assumptions: list[str],
                 env: Mapping[str, str], device: str, arch: str | None, draft_arch: str | None) -> None:
        self.ver, self.st, self.warnings, self.assumptions = ver, st, warnings, assumptions
        self.env, self.device, self.arch, self.draft_arch = env, str(device).lower(), arch, draft_arch
        self.fn = R.since(R.RAISED_AT, ver, "__post_init__")

    def where(self) -> str:
        return self.fn

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def raise_(self, type_: str, message: str) -> NoReturn:
        raise RuleRaised(type_, message, self.fn)

    # --- shared pieces ------------------------------------------------------------------------
    def backend(self) -> str | None:
        st = self.st
        return st.get("attention_backend") or ("torch_native" if self.device == "cpu" else None)

    def run(self) -> None:
        st = self.st
        if st.get("page_size") is None:
            st["page_size"] = 1  # resolved from the attention backend before the spec rules run
        if self.ver >= v("0.5.15") and self.arch in R.DSV4_ARCHS:
            self.deepseek_v4()
        algo = st.get("speculative_algorithm")
        if algo is None:
            return
        if self.ver >= v("0.5.12"):
            algo = str(algo).upper()
            if algo not in R.BUILTIN_ALGORITHMS:
                self.fn = "SpeculativeAlgorithm.from_string"
                self.raise_("ValueError", R.UNKNOWN_ALGO.format(name=algo))
            st["speculative_algorithm"] = algo
        if self.backend() == "flex_attention" and self.ver >= v("0.5.3"):
            self.raise_("AssertionError", R.FLEX_SPEC)
        if algo in R.EAGLE_FAMILY:
            if self.ver >= v("0.5.15"):
                self.fn = "_handle_eagle_family"
                self.eagle_new(algo)
            else:
                self.eagle_old(algo)
        elif algo == "NGRAM":
            if self.ver >= v("0.5.15"):
                self.fn = "_handle_ngram"
                self.ngram_new()
            else:
                self.ngram_old()
        elif algo == "DFLASH":
            self.fn = "_handle_dflash" if self.ver >= v("0.5.15") else self.fn
            self.dflash()
        else:
            self.assumptions.append(f"rules for --speculative-algorithm {algo} are not modelled; "
                                    "only argparse was checked")

    def deepseek_v4(self) -> None:
        """DeepSeek-V4's own hook: it runs before the spec hook, so it sees the algorithm as typed (NEXTN is
        not EAGLE yet) and topk as given (no auto-chosen value yet)."""
        st, arch = self.st, self.arch
        if st.get("max_running_requests") is None:
            st["max_running_requests"] = 256
            self.warn(R.DSV4_MAX_RUNNING.format(n=256, arch=arch))
        algo = st.get("speculative_algorithm")
        if algo is None:
            return
        fn, self.fn = self.fn, "apply_deepseek_v4_defaults"
        if algo not in ("EAGLE", "DSPARK"):
            self.raise_("AssertionError", R.DSV4_ALGO.format(arch=arch))
        if algo == "EAGLE" and st.get("speculative_eagle_topk") != 1:
            self.raise_("AssertionError", R.DSV4_TOPK.format(arch=arch))
        self.fn = fn

    def max_running(self) -> None:
        if self.st.get("max_running_requests") is None:
            self.st["max_running_requests"] = 48
            text = R.since(R.MR48_TEXT, self.ver, None)
            if text:
                self.warn(text)

    def mtp_draft_path(self) -> None:
        st = self.st
        if self.arch is None or self.arch not in R.since(R.MTP_ARCHS, self.ver, ()):
            if st.get("speculative_draft_model_path") is None:
                self.assumptions.append(R.NO_DRAFT_UNKNOWN if self.arch is None else
                                        R.NO_DRAFT_NOT_MTP.format(arch=self.arch))
            return
        if st.get("speculative_draft_model_path") is None:
            st["speculative_draft_model_path"] = st.get("model_path")
            if self.ver >= v("0.5.6"):
                st["speculative_draft_model_revision"] = st.get("revision")
        elif self.arch not in R.MTP_NO_WARN:
            self.warn(R.DSMTP)

    def steps_topk_draft(self, algo: str) -> None:
        st = self.st
        adaptive = self.ver >= v("0.5.12") and st.get("speculative_adaptive")
        if st.get("speculative_num_steps") is None and not adaptive:
            if st.get("speculative_eagle_topk") is not None or st.get("speculative_num_draft_tokens") is not None:
                self.raise_("AssertionError", "")
            triple, note = R.auto_params(self.ver, algo, self.arch)
            if note:
                self.assumptions.append(note)
            st["speculative_num_steps"], st["speculative_eagle_topk"], st["speculative_num_draft_tokens"] = triple
        topk = st.get("speculative_eagle_topk")
        backends = {st.get("attention_backend"), st.get("decode_attention_backend"),
                    st.get("prefill_attention_backend")}
        if self.ver >= v("0.5.1") and "trtllm_mha" in backends:
            if topk is None:
                self.raise_("TypeError", R.TYPEERROR_NONE_GT_INT)
            if topk > 1:
                self.raise_("ValueError", R.TRTLLM_TOPK)
        steps = st.get("speculative_num_steps")
        if self.ver >= v("0.4.6") and topk == 1 and steps is not None \
                and st.get("speculative_num_draft_tokens") != steps + 1:
            self.warn(R.ADJUST)
            st["speculative_num_draft_tokens"] = steps + 1

    def page_topk(self) -> None:
        st = self.st
        allowed = R.since(R.PAGE_TOPK_BACKENDS, self.ver, None)
        topk, page = st.get("speculative_eagle_topk"), st.get("page_size")
        if self.ver < v("0.4.9") and topk is not None and topk > 1 and (page or 1) > 1:
            if self.ver >= v("0.4.6"):
                self.warn(R.TOPK_PAGE_046)
            st["speculative_eagle_topk"] = 1
            return
        if allowed is None:
            if topk is None:
                self.assumptions.append("topk unset with num_steps set: this release does not check it while "
                                        "resolving; start-up fails later on the None")
            return
        if topk is None:
            self.raise_("TypeError", R.TYPEERROR_NONE_GT_INT)
        if topk > 1 and (page or 1) > 1:
            backend = self.backend()
            if backend is None:
                self.assumptions.append(
                    f"topk {topk} with page size {page}: SGLang only allows this with attention backend "
                    f"{' / '.join(allowed)}; which backend it picks depends on the GPU (pass --attention-backend)")
            elif backend not in allowed:
                text = R.PAGE_TOPK_NEW.format(backend=backend) if self.ver >= v("0.5.15") else R.PAGE_TOPK_OLD
                self.raise_("ValueError", text)

    def dp_attention(self) -> bool:
        st = self.st
        return bool(st.get("enable_dp_attention")) or (st.get("attn_dp_size") or 1) > 1

    # --- EAGLE family ---------------------------------------------------------------------------
    def eagle_old(self, algo: str) -> None:
        st, ver = self.st, self.ver
        if algo == "NEXTN":
            algo = st["speculative_algorithm"] = "EAGLE"
        if algo == "STANDALONE" and self.dp_attention():
            self.raise_("AssertionError" if ver < v("0.5.3") else "ValueError", R.STANDALONE_DP)
        self.max_running()
        self.overlap_old(algo)
        if ver >= v("0.4.9") and st.get("enable_mixed_chunk"):
            st["enable_mixed_chunk"] = False
            self.warn(R.MIXED_EAGLE)
        self.mtp_draft_path()
        self.steps_topk_draft(algo)
        if v("0.5.7") <= ver < v("0.5.11") and not st["disable_overlap_schedule"] \
                and (st.get("speculative_eagle_topk") or 1) > 1:
            self.raise_("ValueError", R.SPEC_V2_TOPK)
        self.page_topk()

    def overlap_old(self, algo: str) -> None:
        st, ver, env = self.st, self.ver, self.env
        v2 = R.truthy_env(env.get("SGLANG_ENABLE_SPEC_V2"))
        off = True
        if ver < v("0.4.6"):
            text: str | None = None
        elif ver < v("0.5.4"):
            text = R.OVERLAP_EAGLE
        elif ver < v("0.5.4.post3"):
            off = not (algo == "EAGLE" and st.get("enable_beta_spec"))
            text = R.OVERLAP_EAGLE3_AND if off else R.BETA_SPEC_ON
        elif ver < v("0.5.7"):
            off = not (algo == "EAGLE" and v2)
            text = R.OVERLAP_EAGLE3_OR if off else R.BETA_SPEC_ON
        elif ver < v("0.5.11"):
            v2_algos = ("EAGLE", "EAGLE3", "STANDALONE") if ver >= v("0.5.8") else ("EAGLE", "EAGLE3")
            off = not (algo in v2_algos and v2)
            text = R.SPEC_V2_OFF if off else R.SPEC_V2_ON
        else:
            v2_default = env.get("SGLANG_ENABLE_SPEC_V2") is None or v2
            topk = st.get("speculative_eagle_topk")
            if not v2_default:
                off, text = True, R.SPEC_V1_BECAUSE.format(reason="SGLANG_ENABLE_SPEC_V2=False")
            elif st.get("disable_overlap_schedule"):
                off, text = True, R.SPEC_V1_BECAUSE.format(reason="overlap schedule is disabled")
            elif topk is not None and topk > 1:
                off, text = True, R.SPEC_V1_BECAUSE.format(reason="spec v2 currently only supports topk = 1")
            else:
                off, text = False, R.SPEC_V2_DEFAULT
        if off:
            st["disable_overlap_schedule"] = True
        if text:
            self.warn(text)

    def cpu_overlap(self) -> None:
        """`_disable_overlap_schedule_for_cpu` (0.5.19+; 0.5.15 leaves overlap on with --device cpu)."""
        st = self.st
        if self.ver >= R.CPU_OVERLAP_SINCE and self.device == "cpu" and not st.get("disable_overlap_schedule"):
            self.warn(R.CPU_OVERLAP)
            st["disable_overlap_schedule"] = True

    def eagle_new(self, algo: str) -> None:
        st, ver = self.st, self.ver
        if algo == "NEXTN":
            algo = st["speculative_algorithm"] = "EAGLE"
        if algo == "STANDALONE" and self.dp_attention():
            self.raise_("ValueError", R.STANDALONE_DP)
        self.max_running()
        self.cpu_overlap()
        if st.get("disable_overlap_schedule"):
            self.warn(R.NON_OVERLAP_V2)
        if st.get("enable_mixed_chunk"):
            if ver < v("0.5.20"):
                st["enable_mixed_chunk"] = False
                self.warn(R.MIXED_EAGLE)
            elif algo not in ("EAGLE", "EAGLE3"):
                st["enable_mixed_chunk"] = False
                self.warn(R.MIXED_ALGO.format(algo=algo))
        self.mtp_draft_path()
        self.steps_topk_draft(algo)
        self.page_topk()

    # --- NGRAM ----------------------------------------------------------------------------------
    def ngram_device(self) -> None:
        devices, message = R.since(R.NGRAM_DEVICES, self.ver, (("cuda",), ""))
        if not any(self.device.startswith(d) for d in devices):
            self.raise_("ValueError", message)

    def ngram_page(self) -> None:
        st = self.st
        topk, page = st["speculative_eagle_topk"], st.get("page_size") or 1
        if topk > 1 and page > 1 and self.backend() != "flashinfer":
            if self.backend() is None:
                self.assumptions.append("NGRAM with page size > 1 needs attention backend flashinfer")
                return
            self.raise_("ValueError", R.NGRAM_PAGE_TOPK.format(topk=topk, page=page))

    def ngram_old(self) -> None:
        st, ver = self.st, self.ver
        self.ngram_device()
        self.max_running()
        st["disable_overlap_schedule"] = True
        st["enable_mixed_chunk"] = False
        st["speculative_eagle_topk"] = st.get("speculative_ngram_max_bfs_breadth") or 10
        if st.get("speculative_num_draft_tokens") is None:
            n = st.get("speculative_ngram_max_match_window_size") or 12
            st["speculative_num_draft_tokens"] = n
            if ver >= v("0.5.10"):
                self.warn(R.NGRAM_DRAFT_DEFAULT.format(n=n))
        self.warn(R.NGRAM_OVERLAP_MIXED)
        self.ngram_page()
        if self.dp_attention():
            self.raise_("ValueError", R.NGRAM_DP)

    def ngram_new(self) -> None:
        st = self.st
        self.ngram_device()
        self.cpu_overlap()
        self.max_running()
        st["speculative_eagle_topk"] = topk = st.get("speculative_ngram_max_bfs_breadth") or 10
        if st.get("speculative_num_draft_tokens") is None:
            st["speculative_num_draft_tokens"] = 12
            self.warn(R.NGRAM_DRAFT_DEFAULT.format(n=12))
        if st.get("speculative_num_steps") is None:  # a given step count is kept (0.5.19 / 0.5.23 records)
            st["speculative_num_steps"] = st["speculative_num_draft_tokens"] // topk
        st["enable_mixed_chunk"] = False
        self.warn(R.NGRAM_MIXED)
        self.ngram_page()
        if self.dp_attention():
            self.raise_("ValueError", R.NGRAM_DP)

    # --- DFLASH (0.5.11+) -----------------------------------------------------------------------
    def dflash(self) -> None:
        st = self.st
        if not st.get("speculative_draft_model_path"):
            self.raise_("ValueError", R.DFLASH_NO_DRAFT)
        self.max_running()
        steps, topk = st.get("speculative_num_steps"), st.get("speculative_eagle_topk")
        if steps not in (None, 1):
            self.warn(R.DFLASH_STEPS.format(n=steps))
        if topk not in (None, 1):
            self.warn(R.DFLASH_TOPK.format(n=topk))
        st["speculative_num_steps"] = st["speculative_eagle_topk"] = 1
        if st.get("speculative_num_draft_tokens") is None:
            block = st.get("speculative_dflash_block_size")
            if block is None:
                self.warn(R.DFLASH_DRAFT_DEFAULT)
                self.assumptions.append("DFLASH: the draft config's block_size, when it has one, is used "
                                        "instead of 16")
            st["speculative_num_draft_tokens"] = block or 16
