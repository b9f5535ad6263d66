"""Start-up milestones in SGLang's order (docs/REFERENCE.md §3.4), with plausible sizes and scaled timing.

Order, as a real EAGLE launch logs it: torch distributed init, target weights, target KV pool, target
graph capture, draft weights (`type=LlamaForCausalLMEagle3`), draft KV pool, draft graph captures, then
the capacity line with the effective max_running_requests. Sizes follow the model path's "<N>B" (8B when
absent) on an 80 GB GPU; durations are simulated seconds, divided by --sim-time-scale.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from spectui.sim import faults
from spectui.sim.dpgroup import Rank
from spectui.sim.logfmt import LogFormat
from spectui.sim.model import SpecConfig

GPU_GB = 80.0


def graph_batch_sizes(spec: bool, cap: int) -> list[int]:
    """CUDA-graph batch sizes SGLang captures (docs/REFERENCE.md §2.5), cut at `cap`."""
    if spec:
        ladder = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)]
    else:
        ladder = [1, 2, 4, 8, 12, *range(16, 257, 8)]
    return [b for b in ladder if b <= cap] or [1]


def draft_arch_for(algorithm: str | None, model_arch: str) -> str | None:
    if not algorithm or algorithm == "NGRAM":
        return None
    if algorithm == "EAGLE3":
        return "LlamaForCausalLMEagle3"
    if algorithm in ("EAGLE", "NEXTN") and model_arch.startswith(("Deepseek", "Glm4Moe")):
        return model_arch.replace("ForCausalLM", "ForCausalLMNextN")
    if algorithm == "STANDALONE":
        return model_arch
    return "LlamaForCausalLMEagle"


class Startup:
    def __init__(self, *, fmt: LogFormat, args: dict[str, object], spec: SpecConfig | None, draft_arch: str | None,
                 model_arch: str, log: Callable[[str], None], pause: Callable[[float], Awaitable[None]],
                 ranks: list[Rank] | None = None, rendezvous: Callable[[], Awaitable[bool]] | None = None) -> None:
        self.fmt, self.args, self.spec, self.log, self.pause = fmt, args, spec, log, pause
        self.rendezvous = rendezvous  # multi-node: wait for every node's ranks (spectui.sim.multinode)
        self.ranks = ranks or [Rank(None, 0)]
        self.model_arch, self.draft_arch = model_arch, draft_arch
        self.tp = max(1, int(args.get("tp_size") or 1))  # type: ignore[call-overload]
        m = re.search(r"(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", str(args.get("model_path") or ""))
        self.params_b = float(m.group(1)) if m else 8.0
        self.weights_gb = self.params_b * 2 / self.tp
        self.draft_gb = 0.0 if draft_arch is None else (1.9 if spec else 0.0)
        mfs = float(args.get("mem_fraction_static") or 0.85)  # type: ignore[arg-type]
        self.kv_gb = max(1.0, GPU_GB * mfs - self.weights_gb - self.draft_gb)
        kv_bytes_per_token = 131072 * (self.params_b / 8) ** 0.5 / self.tp
        self.max_total_tokens = int(self.kv_gb * 1e9 / kv_bytes_per_token)
        self.context_len = int(args.get("context_length") or 131072)  # type: ignore[call-overload]
        mrr = args.get("max_running_requests")
        self.max_running = int(mrr) if mrr else min(4096, self.max_total_tokens // 64)  # type: ignore[call-overload]
        # The CPU backend captures no CUDA graphs (the real CPU server logs no capture and `cpu graph: False`).
        self.graphs = not args.get("disable_cuda_graph") and str(args.get("device") or "cuda") != "cpu"
        gmax = args.get("cuda_graph_max_bs") or 256
        self.graph_bs = graph_batch_sizes(spec is not None, min(self.max_running, int(gmax)))  # type: ignore[call-overload]
        self.graph_max_bs = self.graph_bs[-1] if self.graphs else 0

    def _sched_all(self, msg: str) -> None:
        for rank in self.ranks:
            self.log(self.fmt.sched(msg, rank.tp, rank.dp))

    async def before_serving(self, *, oom: bool) -> bool:
        """Log everything up to the capacity line. False when an injected fault killed the scheduler."""
        fmt, avail = self.fmt, GPU_GB - 1.5
        self._sched_all("Init torch distributed begin.")
        if self.rendezvous is not None and not await self.rendezvous():
            return False  # the rendezvous failed (its traceback is logged) or a signal arrived
        await self.pause(1.0 + 0.3 * self.tp)
        self._sched_all("Init torch distributed ends. mem usage=0.45 GB")
        self._sched_all(fmt.weights_begin(avail))
        load_s = 2.0 + 0.5 * self.params_b / self.tp
        await self.pause(load_s)
        avail -= self.weights_gb
        self._sched_all(fmt.weights_end(self.model_arch, load_s, avail, self.weights_gb))
        self._sched_all(fmt.kv_allocated(self.max_total_tokens, self.kv_gb / 2))
        avail -= self.kv_gb
        await self.pause(0.5)
        self._sched_all(fmt.memory_pool_end(avail))
        tokens_per_req = self.spec.draft_tokens if self.spec else 1
        if self.graphs and not await self._capture("target", avail, tokens_per_req, 4.0, oom and self.spec is None):
            return False
        if self.spec is not None and self.draft_arch is not None:
            self._sched_all(fmt.weights_begin(avail))
            await self.pause(1.5)
            avail -= self.draft_gb
            self._sched_all(fmt.weights_end(self.draft_arch, 1.5, avail, self.draft_gb))
            self._sched_all(fmt.kv_allocated(self.max_total_tokens, 0.4))
            if self.graphs:
                if not await self._capture("draft", avail, self.spec.topk, 2.5, oom):
                    return False
                await self._capture("draft extend", avail, self.spec.num_steps + 1, 1.5, False)
        first = self.ranks[0]
        self.log(fmt.sched(fmt.capacity(
            max_total_tokens=self.max_total_tokens, chunked_prefill=int(self.args.get("chunked_prefill_size") or 8192),  # type: ignore[call-overload]
            max_prefill=int(self.args.get("max_prefill_tokens") or 16384), max_running=self.max_running,  # type: ignore[call-overload]
            context_len=self.context_len, avail=avail - 1.5), first.tp, first.dp))
        await self.pause(0.5)
        return True

    async def _capture(self, which: str, avail: float, tokens_per_req: int, secs: float, oom: bool) -> bool:
        fmt = self.fmt
        rank = self.ranks[0]
        for line in fmt.capture_begin(which, avail, self.graph_bs, tokens_per_req):
            self.log(fmt.sched(line, rank.tp, rank.dp))
        await self.pause(secs * (0.4 if oom else 1.0))
        if oom:
            _, lines = faults.capture_oom(draft=which != "target")
            self.log(fmt.sched("Scheduler hit an exception: " + lines[0], rank.tp, rank.dp))
            for line in lines[1:]:
                self.log(line)
            return False
        self.log(fmt.sched(fmt.capture_end(which, secs, 0.9, avail - 0.9, self.graph_bs, tokens_per_req),
                           rank.tp, rank.dp))
        return True
