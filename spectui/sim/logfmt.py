"""SGLang's log line formats by release (docs/REFERENCE.md §3): prefixes, Decode/Prefill templates, milestones.

Every method returns one line without its newline. Version boundaries follow docs/REFERENCE.md §3; where it
only knows the 0.5.6 and the 0.5.23 shape of a milestone (weights, KV, graph capture), releases up to
0.5.18 get the 0.5.6 shape and 0.5.20+ the 0.5.23 shape, the same boundary as the `server_args=` line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence


def vtuple(version: str) -> tuple[int, int, int]:
    """"0.5.4.post3" -> (0, 5, 4)."""
    nums = [int(x) for x in re.findall(r"\d+", version)[:3]]
    return (nums + [0, 0, 0])[0], (nums + [0, 0, 0])[1], (nums + [0, 0, 0])[2]


class LogFormat:
    """Formats for one SGLang release. `clock` returns epoch seconds (injectable for tests)."""

    def __init__(self, version: str, *, tp_size: int = 1, clock=time.time, device: str = "cuda") -> None:
        self.version = version
        self.v = vtuple(version)
        self.tp_size = tp_size
        self._clock = clock
        # `--device cpu`: SGLang's CPU backend says `cpu graph: False` where a GPU says `cuda graph:` (the
        # real CPU server's lines, shared/real-sglang), and its capacity line counts available_cpu_mem.
        self.device = device
        self.graph_key = "cpu graph" if device == "cpu" else "cuda graph"

    # -- prefixes ---------------------------------------------------------------------------------
    def ts(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self._clock()))

    def main(self, msg: str) -> str:
        """A line from the main (HTTP/tokenizer) process: no tags."""
        return f"[{self.ts()}] {msg}"

    def sched(self, msg: str, tp_rank: int = 0, dp_rank: int | None = None) -> str:
        """A line from a scheduler process: `DPn` with data parallelism, `TPn` only when tp > 1 (0.4.9+)."""
        tag = (f" DP{dp_rank}" if dp_rank is not None else "") + (f" TP{tp_rank}" if self.tp_size > 1 else "")
        return f"[{self.ts()}{tag}] {msg}"

    def uvicorn(self, msg: str, level: str = "INFO") -> str:
        # uvicorn's levelprefix pads "INFO:" to 9 columns ("INFO:     ", "ERROR:    ").
        return f"[{self.ts()}] {(level + ':').ljust(9)} {msg}"

    def access(self, client: str, method: str, path: str, status: int, phrase: str) -> str:
        return self.uvicorn(f'{client} - "{method} {path} HTTP/1.1" {status} {phrase}')

    @property
    def bare_warnings(self) -> bool:
        """≤0.5.10 logs resolution warnings before logging is configured: bare lines, no timestamp."""
        return self.v <= (0, 5, 10)

    @property
    def prog(self) -> str:
        return "sglang serve" if self.v >= (0, 5, 10) else "launch_server.py"

    @property
    def new_milestones(self) -> bool:
        return self.v >= (0, 5, 20)

    # -- periodic lines -----------------------------------------------------------------------------
    def accept_rate(self, accept_len: float, steps: int | None, draft_tokens: int | None) -> float:
        """SGLang's own `accept rate` for this release (docs/REFERENCE.md §3.2: three formulas)."""
        if self.v >= (0, 5, 12):
            return (accept_len - 1) / max(1, (draft_tokens or 2) - 1)
        if self.v >= (0, 5, 6):
            return accept_len / (draft_tokens or (steps or 0) + 1 or 1)
        if steps is None:  # NGRAM on 0.5.4/0.5.5: the rate equals accept len
            return accept_len
        return accept_len / (steps + 1)

    def _batch_head(self, kind: str, counter: int) -> str:
        if self.v <= (0, 5, 3):
            return f"{kind} batch. "
        if self.v[:3] == (0, 5, 4):
            return f"{kind} batch [{counter}], "
        return f"{kind} batch, "

    @property
    def _trailing(self) -> str:
        return ", " if (0, 4, 10) <= self.v <= (0, 5, 8) else ""

    def decode(self, *, counter: int, running: int, tokens: int, usage: float, accept_len: float | None,
               steps: int | None, draft_tokens: int | None, graph: bool, gen_tps: float, queue: int) -> str:
        spec = ""
        if accept_len is not None:
            spec = f"accept len: {accept_len:.2f}, "
            if self.v >= (0, 5, 4):
                spec += f"accept rate: {self.accept_rate(accept_len, steps, draft_tokens):.2f}, "
        return (f"{self._batch_head('Decode', counter)}#running-req: {running}, #token: {tokens}, "
                f"token usage: {usage:.2f}, {spec}{self.graph_key}: {graph}, "
                f"gen throughput (token/s): {gen_tps:.2f}, #queue-req: {queue}{self._trailing}")

    def prefill(self, *, counter: int, new_seq: int, new_token: int, cached: int, usage: float,
                running: int, queue: int, graph: bool, input_tps: float) -> str:
        head = (f"{self._batch_head('Prefill', counter)}#new-seq: {new_seq}, #new-token: {new_token}, "
                f"#cached-token: {cached}, token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queue}")
        if self.v <= (0, 5, 8):
            return head + self._trailing
        if self.v[:3] == (0, 5, 9):
            return f"{head}, input throughput (token/s): {input_tps:.2f}, {self.graph_key}: {graph}"
        if self.v <= (0, 5, 11):
            return f"{head}, {self.graph_key}: {graph}, input throughput (token/s): {input_tps:.2f}"
        return f"{head}, #pending-token: 0, {self.graph_key}: {graph}, input throughput (token/s): {input_tps:.2f}"

    # -- start-up milestones ----------------------------------------------------------------------
    def server_args(self, args: Mapping[str, object]) -> str:
        if self.v >= (0, 5, 20):
            return f"server_args={dict(args)!r}"
        return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"

    def weights_begin(self, avail: float) -> str:
        return f"Load weight begin. avail mem={avail:.2f} GB"

    def weights_end(self, arch: str, elapsed: float, avail: float, usage: float) -> str:
        if self.new_milestones:
            return f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB."
        return f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB, mem usage={usage:.2f} GB."

    def kv_allocated(self, tokens: int, k_gb: float) -> str:
        dtype = "dtype: torch.bfloat16, " if self.new_milestones else ""
        return f"KV Cache is allocated. {dtype}#tokens: {tokens}, K size: {k_gb:.2f} GB, V size: {k_gb:.2f} GB"

    def memory_pool_end(self, avail: float) -> str:
        return f"Memory pool end. avail mem={avail:.2f} GB"

    def capture_begin(self, which: str, avail: float, bs: Sequence[int], tokens_per_req: int) -> list[str]:
        """which: "target" | "draft" | "draft extend". Old releases also print the bs list (rank 0)."""
        if self.new_milestones:
            label = {"target": "target verify" if tokens_per_req > 1 else "target decode",
                     "draft": "draft decode", "draft extend": "draft extend"}[which]
            bs_part = "" if which == "target" else f"bs={list(bs)}, "
            return [f"Capture {label} CUDA graph begin. backend=full, num_tokens_per_req={tokens_per_req}, "
                    f"{bs_part}avail mem={avail:.2f} GB"]
        label = {"target": "cuda graph", "draft": "draft cuda graph", "draft extend": "draft extend cuda graph"}[which]
        lines = [f"Capture {label} begin. This can take up to several minutes. avail mem={avail:.2f} GB"]
        if which == "target":
            lines.append(f"Capture cuda graph bs {list(bs)}")
        return lines

    def capture_end(self, which: str, elapsed: float, usage: float, avail: float, bs: Sequence[int],
                    tokens_per_req: int) -> str:
        if self.new_milestones:
            label = {"target": "target verify" if tokens_per_req > 1 else "target decode",
                     "draft": "draft decode", "draft extend": "draft extend"}[which]
            bs_part = f"bs={list(bs)}, " if which == "target" else ""
            return (f"Capture {label} CUDA graph end. {bs_part}elapsed={elapsed:.2f} s, mem usage={usage:.2f} GB, "
                    f"avail mem={avail:.2f} GB.")
        label = {"target": "cuda graph", "draft": "draft cuda graph", "draft extend": "draft extend cuda graph"}[which]
        return f"Capture {label} end. Time elapsed: {elapsed:.2f} s. mem usage={usage:.2f} GB. avail mem={avail:.2f} GB."

    def capacity(self, *, max_total_tokens: int, chunked_prefill: int, max_prefill: int, max_running: int,
                 context_len: int, avail: float) -> str:
        return (f"max_total_num_tokens={max_total_tokens}, chunked_prefill_size={chunked_prefill}, "
                f"max_prefill_tokens={max_prefill}, max_running_requests={max_running}, "
                f"context_len={context_len}, available_{'cpu' if self.device == 'cpu' else 'gpu'}_mem={avail:.2f} GB")

    def uvicorn_startup(self, pid: int, host: str, port: int) -> list[str]:
        return [self.uvicorn(f"Started server process [{pid}]"), self.uvicorn("Waiting for application startup."),
                self.uvicorn("Application startup complete."),
                self.uvicorn(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")]

    def uvicorn_shutdown(self, pid: int) -> list[str]:
        return [self.uvicorn("Shutting down"), self.uvicorn("Waiting for application shutdown."),
                self.uvicorn("Application shutdown complete."), self.uvicorn(f"Finished server process [{pid}]")]

    @property
    def model_info_path(self) -> str:
        return "/model_info" if self.new_milestones else "/get_model_info"

    def deprecated_endpoint(self, old: str, new: str) -> str:
        return f"Endpoint '{old}' is deprecated and will be removed in a future version. Please use '{new}' instead."
