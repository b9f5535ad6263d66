"""Error lines and decode fragments are found wherever a paste or a log sink put them (#27 point 1).

Shapes: a whole paste indented; a cloud sink's own prefix in front of SGLang's (CRI node logs
`<RFC3339> stderr F `, `kubectl logs --prefix` `[pod/NAME/CONTAINER] `, journald `Mon DD hh:mm:ss host
prog[pid]: `); a decode line pasted without its `Decode batch` start. The SGLang lines themselves follow
docs/REFERENCE.md §3.2/§3.5 (0.5.6 formats).
"""

from __future__ import annotations

import pytest

from spectui.core.log import DecodeSample, ErrorEvent, LogParser

TRACEBACK = [
    "[2025-12-03 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2070, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1400, in init_memory_pool',
    "    raise RuntimeError(",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "",
    "[2025-12-03 10:00:01] Received sigquit from a child process. It usually means the child failed.",
]
SINKS = {
    "cri": "2025-12-03T10:00:00.123456789Z stderr F {}",
    "kubectl-prefix": "[pod/sglang-0/server] {}",
    "journald": "Dec 03 10:00:00 gpu-node-7 python3[4242]: {}",
    "rfc3339-syslog": "2025-12-03T10:00:00+00:00 gpu-node-7 python3[4242]: {}",
    "viewer-export": "2025-12-03 10:00:00.123 UTC {}",
    "slurm-srun-label": " 3: {}",
    "openmpi-tag-output": "[1,3]<stderr>:{}",
    "indented-4": "    {}",
    "indented-tab": "\t{}",
}


def _events(lines: list[str]) -> list[ErrorEvent]:
    parser = LogParser()
    records = parser.feed(lines) + parser.finish()
    return [r for r in records if isinstance(r, ErrorEvent)]


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_traceback_under_a_foreign_prefix_or_indentation_keeps_type_message_and_frames(sink: str) -> None:
    fmt = SINKS[sink]
    events = _events([fmt.format(line) if line else line for line in TRACEBACK])
    assert [e.exc_type for e in events] == ["RuntimeError", "SIGQUIT"]
    first = events[0]
    assert first.message == "Not enough memory. Please try to increase --mem-fraction-static."
    assert [f.func for f in first.frames] == ["run_scheduler_process", "init_memory_pool"]
    assert first.frames[-1].source == "raise RuntimeError("
    assert first.ctx.tp_rank == 0


def test_indented_paste_of_a_bare_traceback_finds_its_exception_line() -> None:
    lines = ["    Traceback (most recent call last):",
             '      File "/sgl/python/sglang/srt/speculative/eagle_worker.py", line 300, in verify',
             "        raise IndexError(\"index 64 is out of bounds\")",
             "    IndexError: index 64 is out of bounds"]
    (event,) = _events(lines)
    assert (event.exc_type, event.message) == ("IndexError", "index 64 is out of bounds")
    assert event.frames[-1].func == "verify"


def test_cut_traceback_starting_at_an_indented_frame_still_reads_its_exception() -> None:
    lines = ['      File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 147, in __init__',
             "        self.capture()",
             "    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB"]
    (event,) = _events(lines)
    assert event.exc_type == "torch.OutOfMemoryError"
    assert event.frames[0].func == "__init__"


def test_an_indented_exception_line_alone_is_an_error() -> None:
    (event,) = _events(["  RuntimeError: CUDA error: device-side assert triggered"])
    assert (event.exc_type, event.message) == ("RuntimeError", "CUDA error: device-side assert triggered")


@pytest.mark.parametrize("line", [
    "    ValueError",  # a bare word: too weak alone
    "        return forward_batch.spec_info: int",  # code-ish, deeper than a paste's indent
    "  Note: accept len is printed every 40 decode steps",
])
def test_indented_non_errors_stay_quiet(line: str) -> None:
    assert _events([line]) == []


def test_frames_source_lines_are_not_taken_for_the_exception_in_an_indented_paste() -> None:
    lines = ["  Traceback (most recent call last):",
             '    File "/sgl/python/sglang/srt/layers/sampler.py", line 90, in forward',
             "      RuntimeError: not the exception (a source line)",
             "  AssertionError: real one"]
    (event,) = _events(lines)
    assert event.exc_type == "AssertionError"
    assert event.frames[-1].source == "RuntimeError: not the exception (a source line)"


def _decodes(lines: list[str]) -> list[DecodeSample]:
    parser = LogParser()
    return [r for r in parser.feed(lines) + parser.finish() if isinstance(r, DecodeSample)]


@pytest.mark.parametrize("line", [
    "accept len: 1.00, accept rate: 0.00, cuda graph: True, gen throughput (token/s): 41.07, #queue-req: 0,",
    "accept len: 1.00, accept rate: 0.00",
    "  #running-req: 1, #token: 1200, token usage: 0.01, accept len: 1.00, accept rate: 0.00, ",
    "2025-12-03T10:00:00Z stdout F accept len: 1.00, accept rate: 0.00, cuda graph: True",
    "..., accept len: 1.00, accept rate: 0.00, …",  # the paste elided the fields around it
])
def test_decode_fragment_without_its_prefix_is_a_decode_sample(line: str) -> None:
    (sample,) = _decodes([line])
    assert (sample.accept_len, sample.accept_rate) == (1.0, 0.0)


@pytest.mark.parametrize("line", [
    "Accept length: 1.00",  # bench_serving's summary wording, not a decode line
    "accept len: 1.00",  # one field: too little to call a decode line
    "#running-req: 1, #queue-req: 0",  # no decode-only key (could be a prefill fragment)
    "accept len: high, accept rate: low",
    "The mean accept len: 2.3, as measured over 10 runs",
])
def test_non_fragments_are_not_decode_samples(line: str) -> None:
    assert _decodes([line]) == []


@pytest.mark.parametrize("header", [
    "Current thread 0x00007f3d5b7fe740 (most recent call first):",
    "Current thread 0x00007f3d5b7fe740 [python3] (most recent call first):",  # Python 3.13 names the thread
    "Stack (most recent call first):",
])
def test_faulthandler_dump_gives_the_crashing_threads_frames_innermost_last(header: str) -> None:
    lines = ["Fatal Python error: Segmentation fault", "",
             "Thread 0x00007f3c2effd640 (most recent call first):",
             '  File "/usr/lib/python3.10/threading.py", line 324 in wait', "",
             header,
             '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 712 in replay',
             '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1720 in forward',
             '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1601 in run_batch', "",
             "Extension modules: numpy.core._multiarray_umath, torch._C (total: 52)"]
    if header.startswith("Stack"):
        lines = lines[:2] + lines[5:]  # one thread: no other thread's block
    (event,) = _events(lines)
    assert event.exc_type == "FatalPythonError" and event.message == "Fatal Python error: Segmentation fault"
    assert [f.func for f in event.frames] == ["run_batch", "forward", "replay"]
