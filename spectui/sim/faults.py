"""Failures the simulator injects on demand (`--sim-fault`), with the text SGLang prints for each.

The tracebacks are shaped like real ones (tests/data/corpus 010, 012, 029, 033): the headline carries the
scheduler's prefix, the frames and the exception line carry none.
"""

from __future__ import annotations

from dataclasses import dataclass

FAULT_NAMES = ("oom-at-capture", "crash-after N", "layer-mismatch", "nccl-timeout", "no-dummy-health")

# A draft whose aux hidden-state layers do not match the target: drafts are almost never accepted.
LAYER_MISMATCH_ALPHA = 0.08
NCCL_HANG_S = 20.0  # simulated seconds of a stuck collective before the watchdog fires

SITE = "/usr/local/lib/python3.12/dist-packages/sglang"


class KnobError(ValueError):
    """A `--sim-*` knob is unknown or has a bad value; the message is one line for the operator."""


@dataclass(frozen=True, slots=True)
class Fault:
    name: str  # "oom-at-capture" | "crash-after" | "layer-mismatch" | "nccl-timeout" | "no-dummy-health"
    count: int = 0  # crash-after: requests served before the crash

    @classmethod
    def parse(cls, text: str) -> Fault:
        name, _, count = text.replace("=", ":").partition(":")
        if name == "crash-after":
            if not count.isdigit():
                raise KnobError("--sim-fault crash-after needs a request count, e.g. --sim-fault crash-after 3")
            return cls(name, int(count))
        if name in ("oom-at-capture", "layer-mismatch", "nccl-timeout", "no-dummy-health") and not count:
            return cls(name)
        raise KnobError(f"unknown --sim-fault {text!r}; choose from: {', '.join(FAULT_NAMES)}")


def frames_under(site: str, *frames: tuple[str, int, str, str]) -> list[str]:
    """Traceback frame lines (`File "…", line N, in f` and its source line) of files under `site`."""
    out = []
    for path, line, func, src in frames:
        out.append(f'  File "{site}/{path}", line {line}, in {func}')
        out.append(f"    {src}")
    return out


def _frames(*frames: tuple[str, int, str, str]) -> list[str]:
    return frames_under(SITE, *frames)


_SCHEDULER_INIT = (
    ("srt/managers/scheduler.py", 2960, "run_scheduler_process", "scheduler = Scheduler("),
    ("srt/managers/scheduler.py", 331, "__init__", "self.init_model_worker()"),
    ("srt/managers/scheduler.py", 498, "init_model_worker", "self.draft_worker = DraftWorkerClass("),
    ("srt/speculative/eagle_worker.py", 138, "__init__", "super().__init__("),
    ("srt/managers/tp_worker.py", 104, "__init__", "self.model_runner = ModelRunner("),
    ("srt/model_executor/model_runner.py", 322, "__init__", "self.initialize(min_per_gpu_memory)"),
    ("srt/model_executor/model_runner.py", 475, "initialize", "self.init_device_graphs()"),
    ("srt/model_executor/model_runner.py", 2231, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)"),
    ("srt/model_executor/cuda_graph_runner.py", 392, "__init__", "raise Exception("),
)

_SCHEDULER_LOOP = (
    ("srt/managers/scheduler.py", 2975, "run_scheduler_process", "scheduler.event_loop_normal()"),
    ("srt/managers/scheduler.py", 1020, "event_loop_normal", "result = self.run_batch(batch)"),
    ("srt/managers/scheduler.py", 2081, "run_batch", "batch_result = self.model_worker.forward_batch_generation(batch)"),
    ("srt/speculative/eagle_worker.py", 281, "forward_batch_generation", "logits_output, verify_output, model_worker_batch, _ = self.verify("),
    ("srt/speculative/eagle_worker.py", 694, "verify", "res: EagleVerifyOutput = spec_info.verify("),
    ("srt/speculative/eagle_info.py", 348, "verify", "accept_index_cpu = accept_index.tolist()"),
)


def capture_oom(draft: bool) -> tuple[str, list[str]]:
    """(exception line, traceback lines) for an OOM while capturing CUDA graphs."""
    frames = _frames(*_SCHEDULER_INIT) if draft else _frames(*(_SCHEDULER_INIT[:2] + _SCHEDULER_INIT[4:]))
    exc = ("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a "
           "total capacity of 79.11 GiB of which 301.06 MiB is free. Including non-PyTorch memory, this process "
           "has 78.80 GiB memory in use.")
    tail = ["Possible solutions:", "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
            "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
            "3. disable torch compile by not using --enable-torch-compile",
            "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
            "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "]
    return exc, ["Traceback (most recent call last):", *frames, exc, *tail]


def runtime_crash() -> list[str]:
    exc = "RuntimeError: CUDA error: an illegal memory access was encountered"
    return [*(_frames(*_SCHEDULER_LOOP)), exc,
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]


def nccl_watchdog(stamp: str, seq: int) -> list[str]:
    """torch's ProcessGroupNCCL watchdog lines (glog style, `[rank0]:` tag); stamp is `MMDD HH:MM:SS`."""
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, Timeout(ms)=600000)")
    return [
        f"[rank0]:[E{stamp}.526290891 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        f"timeout: {work} ran for 600047 milliseconds before timing out.",
        f"[rank0]:[E{stamp}.526301625 ProcessGroupNCCL.cpp:2168] [PG ID 2 PG GUID 3(TP) Rank 0] failure "
        f"detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed work: {seq - 1}",
        f"[rank0]:[E{stamp}.526306740 ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 2 PG GUID 3(TP) Rank 0] Process group watchdog thread terminated with exception: "
        f"[Rank 0] Watchdog caught collective operation timeout: {work} ran for 600047 milliseconds before timing out.",
    ]


SIGQUIT_LAUNCH = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_RUNNING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."
