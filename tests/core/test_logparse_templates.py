"""LogParser on lines built from docs/REFERENCE.md §3 templates for each SGLang release, tracebacks and bad input."""

from __future__ import annotations

import pytest

from spectui.core.log import (
    DecodeSample,
    ErrorEvent,
    LogParser,
    Milestone,
    MilestoneKind,
    OtherLine,
    PrefillSample,
    RecordKind,
    WarningEvent,
    guess_version,
)


def parse(lines: list[str], **kw) -> tuple[LogParser, list]:
    p = LogParser(**kw)
    return p, p.feed(lines) + p.finish()


# (release, Decode line per the §3.2 template, accept_len, accept_rate, graph, iteration, version guess)
DECODE_TEMPLATES = [
    ("0.4.6", "[2025-04-27 10:00:00 TP0] Decode batch. #running-req: 3, #token: 1200, token usage: 0.05, "
     "accept len: 2.41, gen throughput (token/s): 88.10, #queue-req: 0", 2.41, None, None, None, "<=0.4.6"),
    ("0.4.9", "[2025-07-01 10:00:00] Decode batch. #running-req: 3, #token: 1200, token usage: 0.05, "
     "accept len: 2.41, cuda graph: True, gen throughput (token/s): 88.10, #queue-req: 0", 2.41, None, True, None,
     "0.4.9"),
    ("0.5.3", "[2025-10-01 10:00:00] Decode batch. #running-req: 1, #token: 90, token usage: 0.00, "
     "accept len: 1.62, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, ", 1.62, None, True,
     None, "<=0.5.3"),
    ("0.5.4", "[2025-10-20 10:00:00] Decode batch [1200], #running-req: 1, #token: 90, token usage: 0.00, "
     "accept len: 1.62, accept rate: 0.41, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, ",
     1.62, 0.41, True, 1200, "0.5.4"),
    ("0.5.6", "[2025-12-03 10:00:05] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, "
     "accept len: 1.62, accept rate: 0.10, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, ",
     1.62, 0.10, True, None, ">=0.5.5,<=0.5.8"),
    ("0.5.9-npu", "[2026-02-01 10:00:05 TP1] Decode batch, #running-req: 2, #token: 90, token usage: 0.00, "
     "accept len: 2.00, accept rate: 0.50, npu graph: False, gen throughput (token/s): 56.80, #queue-req: 0",
     2.00, 0.50, False, None, ">=0.5.9"),
    ("0.5.10-mfu", "[2026-03-01 10:00:05] Decode batch, #running-req: 2, #token: 90, token usage: 0.00, "
     "accept len: 2.00, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, "
     "est. decode TFLOPS/s (per GPU): 12.50, est. read BW (GB/s per GPU): 800.00, est. write BW (GB/s per GPU): "
     "3.00", 2.00, 0.50, True, None, ">=0.5.10"),
    ("0.5.23", "[2026-11-30 10:00:05.123 DP1 TP4 EP4] Decode batch, #running-req: 48, #token: 90, "
     "token usage: 0.71, accept len: 3.10, accept rate: 0.70, cap len: 4.00, block accept len: 3.00, "
     "musa graph: True, gen throughput (token/s): 1456.80, #queue-req: 12, fwd occupancy: 91.20%",
     3.10, 0.70, True, None, ">=0.5.18"),
]


@pytest.mark.parametrize(("release", "line", "acc", "rate", "graph", "iteration", "guess"), DECODE_TEMPLATES,
                         ids=[t[0] for t in DECODE_TEMPLATES])
def test_decode_templates(release, line, acc, rate, graph, iteration, guess) -> None:
    p, recs = parse([line])
    (rec,) = recs
    assert isinstance(rec, DecodeSample)
    assert (rec.accept_len, rec.accept_rate, rec.graph, rec.iteration) == (acc, rate, graph, iteration)
    assert rec.gen_tokens_per_s is not None and rec.queue_req is not None
    assert guess_version(p.version_hints) == guess


def test_decode_hybrid_swa_and_pd_fields_kept() -> None:
    line = ("[2025-12-03 10:00:05 DP0 TP0] Decode batch, #running-req: 4, #full token: 5000, full token usage: 0.20, "
            "#swa token: 800, swa token usage: 0.10, accept len: 2.00, accept rate: 0.50, pre-allocated usage: 0.33, "
            "#prealloc-req: 1, #transfer-req: 2, #retracted-req: 0, cuda graph: True, gen throughput (token/s): "
            "99.00, #queue-req: 0, ")
    (rec,) = parse([line])[1]
    assert rec.tokens == 5000 and rec.token_usage == 0.20
    assert rec.fields["#swa token"] == "800" and rec.fields["#transfer-req"] == "2"
    assert rec.ctx.dp_rank == 0


PREFILL_TEMPLATES = [
    "[2025-10-01 10:00:00] Prefill batch. #new-seq: 1, #new-token: 63, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, ",
    "[2025-10-20 10:00:00] Prefill batch [1201], #new-seq: 1, #new-token: 63, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, ",
    "[2026-11-30 10:00:05 TP0] Prefill batch, #new-seq: 1, #new-token: 63, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 1234.50",
]


@pytest.mark.parametrize("line", PREFILL_TEMPLATES)
def test_prefill_templates(line: str) -> None:
    (rec,) = parse([line])[1]
    assert isinstance(rec, PrefillSample)
    assert (rec.new_seq, rec.new_token, rec.cached_token, rec.queue_req) == (1, 63, 0, 0)


MILESTONE_TEMPLATES = [
    ("[2025-12-03 10:00:01 TP0] Init torch distributed begin.", MilestoneKind.DIST_INIT),
    ("[2025-12-03 10:00:02 TP0] Load weight begin. avail mem=78.50 GB", MilestoneKind.WEIGHTS_BEGIN),
    ("[2026-11-30 10:00:03 TP0] Load weight end. elapsed=12.30 s, type=DeepseekV3ForCausalLM, avail mem=30.00 GB, "
     "mem usage=40.00 GB.", MilestoneKind.WEIGHTS_LOADED),
    ("[2025-12-03 10:00:04 TP0] Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=61.00 "
     "GB, mem usage=1.10 GB.", MilestoneKind.DRAFT_WEIGHTS_LOADED),
    ("[2026-11-30 10:00:05 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail "
     "mem=20.00 GB", MilestoneKind.GRAPH_CAPTURE_BEGIN),
    ("[2026-11-30 10:00:09 TP0] Capture draft decode CUDA graph end. elapsed=3.00 s, mem usage=0.50 GB, avail "
     "mem=19.00 GB.", MilestoneKind.GRAPH_CAPTURE_END),
    ("[2025-12-03 10:00:05 TP0] Capture draft extend cuda graph begin. This can take up to several minutes. avail "
     "mem=20.00 GB", MilestoneKind.GRAPH_CAPTURE_BEGIN),
    ("[2025-12-03 10:00:10 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
     "max_running_requests=48, context_len=131072, available_gpu_mem=18.30 GB", MilestoneKind.CAPACITY),
    ("[2025-12-03 10:00:05] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
     MilestoneKind.UVICORN_UP),
    ("[2025-12-03 10:00:06] The server is fired up and ready to roll!", MilestoneKind.FIRED_UP),
    ("[2025-12-03 11:00:00] INFO:     Shutting down", MilestoneKind.SHUTDOWN),
    ("[2026-11-30 10:00:00] server_args={'model_path': '/m', 'speculative_num_draft_tokens': 4, 'dp_size': 1}",
     MilestoneKind.SERVER_ARGS),
]


@pytest.mark.parametrize(("line", "kind"), MILESTONE_TEMPLATES, ids=[t[1].value for t in MILESTONE_TEMPLATES])
def test_milestone_templates(line: str, kind: MilestoneKind) -> None:
    (rec,) = parse([line])[1]
    assert isinstance(rec, Milestone) and rec.kind is kind


def test_second_load_weight_end_on_a_rank_is_the_draft() -> None:
    lines = [
        "[2025-12-03 10:00:03 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60 GB",
        "[2025-12-03 10:00:03 TP1] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60 GB",
        "[2025-12-03 10:00:04 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=59 GB",
    ]
    kinds = [r.kind for r in parse(lines)[1]]
    assert kinds == [MilestoneKind.WEIGHTS_LOADED, MilestoneKind.WEIGHTS_LOADED, MilestoneKind.DRAFT_WEIGHTS_LOADED]


BARE_ASSERT = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/runpy.py", line 198, in _run_module_as_main',
    '    return _run_code(code, main_globals, None,',
    '  File "/sgl/python/sglang/srt/server_args.py", line 1480, in _handle_speculative_decoding',
    "    assert self.speculative_num_steps is not None",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "AssertionError",
]


def test_bare_assertion_error_is_one_event_with_empty_message() -> None:
    p, recs = parse(BARE_ASSERT)
    (ev,) = recs
    assert isinstance(ev, ErrorEvent)
    assert (ev.exc_type, ev.message) == ("AssertionError", "")
    assert (ev.line, ev.end_line) == (1, 7)
    assert [f.func for f in ev.frames] == ["_run_module_as_main", "_handle_speculative_decoding"]
    assert ev.frames[1].source == "assert self.speculative_num_steps is not None"
    assert p.counts[RecordKind.ERROR] == 1 and p.counts[RecordKind.OTHER] == 6


def test_scheduler_traceback_ends_at_next_prefixed_line_and_chained_exceptions() -> None:
    lines = [
        "[2025-12-03 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/scheduler.py", line 10, in run',
        "    x()",
        "KeyError: 'a'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/sgl/scheduler.py", line 12, in run',
        "    y()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "[2025-12-03 10:00:05] Received sigquit from a child process. It usually means the child failed.",
    ]
    p, recs = parse(lines)
    tb, sig = recs
    assert (tb.exc_type, tb.message) == ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert (tb.line, tb.end_line, len(tb.frames)) == (1, 11, 2)
    assert sig.exc_type == "SIGQUIT" and sig.line == 12


def test_flush_emits_a_pending_traceback_for_the_idle_timer() -> None:
    p = LogParser()
    assert p.feed(["[2025-12-03 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                   '  File "/sgl/scheduler.py", line 10, in run']) == []
    (ev,) = p.flush()
    assert ev.exc_type == "Traceback" and ev.end_line == 2
    assert p.flush() == []


ARGPARSE_LINES = [
    ("sglang serve: error: unrecognized arguments: --num-speculative-tokens 16",
     "unrecognized arguments: --num-speculative-tokens 16", ">=0.5.10"),
    ("launch_server.py: error: argument --speculative-algorithm: invalid choice: 'eagle3' (choose from 'EAGLE', "
     "'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')",
     "argument --speculative-algorithm: invalid choice: 'eagle3' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', "
     "'STANDALONE', 'NGRAM')", "<=0.5.9"),
    ("sglang: error: ambiguous option: --speculative-num could match --speculative-num-steps, "
     "--speculative-num-draft-tokens", "ambiguous option: --speculative-num could match --speculative-num-steps, "
     "--speculative-num-draft-tokens", ">=0.5.5,<=0.5.9"),
]


@pytest.mark.parametrize(("line", "message", "guess"), ARGPARSE_LINES)
def test_argparse_errors(line: str, message: str, guess: str) -> None:
    usage = ["usage: sglang serve [-h] --model-path MODEL_PATH", "                    [--tokenizer-path TOKENIZER_PATH]"]
    p, recs = parse([*usage, line])
    ms, ev = recs
    assert ms.kind is MilestoneKind.ARGPARSE_USAGE
    assert (ev.exc_type, ev.message, ev.line) == ("ArgparseError", message, 3)
    assert guess_version(p.version_hints) == guess


WARNINGS = [
    ("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
     "resolution"),
    ("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting "
     "--max-running-requests.", "resolution"),
    ("Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding.", "resolution"),
    ("[2026-11-30 14:22:13] speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
     "speculative_eagle_topk == 1", "resolution"),
    ("[2025-12-03 10:00:05 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: "
     "0.5 -> 0.7", "notice"),
    ("/usr/lib/python3.12/site-packages/sglang/launch_server.py:14: UserWarning: 'python -m sglang.launch_server' "
     "is still supported, but 'sglang serve' is the recommended entrypoint.", "python"),
    ("\x1b[1;33mThe argument --enable-beta-spec is deprecated and will be removed.\x1b[0m", "deprecation"),
    ("2025-12-04 20:35:53 WARNING 151972 [scheduler.py:12] something odd", "level"),
]


@pytest.mark.parametrize(("line", "category"), WARNINGS)
def test_warnings(line: str, category: str) -> None:
    (rec,) = parse([line])[1]
    assert isinstance(rec, WarningEvent)
    assert rec.category == category
    assert "\x1b" not in rec.text


def test_bare_warnings_end_a_top_level_traceback_and_mark_old_releases() -> None:
    lines = [*BARE_ASSERT, "Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding."]
    p, recs = parse(lines)
    assert [type(r) for r in recs] == [ErrorEvent, WarningEvent]
    assert guess_version(p.version_hints) == ">=0.5.5,<=0.5.6"


PREFIXES = [
    ("llm0-1  | [2025-12-03 10:00:05 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, cuda graph: "
     "True, gen throughput (token/s): 5.00, #queue-req: 0, ", "2025-12-03 10:00:05", "TP0"),
    ("[2025-02-27T16:30:43.48675097Z] [2025-02-27 16:30:43 DP1 TP1] Decode batch. #running-req: 1, #token: 9, "
     "token usage: 0.00, gen throughput (token/s): 5.00, #queue-req: 0", "2025-02-27 16:30:43", "DP1 TP1"),
    ("(SchedulerActor pid=123, ip=10.0.0.1) [2025-12-03 10:00:05 PP1 TP2] Decode batch, #running-req: 1, #token: 9, "
     "token usage: 0.00, cuda graph: True, gen throughput (token/s): 5.00, #queue-req: 0, ", "2025-12-03 10:00:05",
     "PP1 TP2"),
    ("\x1b[32m[2025-12-03 10:00:05 TP0]\x1b[0m Decode batch, #running-req: 1, #token: 9, token usage: 0.00, cuda "
     "graph: True, gen throughput (token/s): 5.00, #queue-req: 0, ", "2025-12-03 10:00:05", "TP0"),
]


@pytest.mark.parametrize(("line", "ts", "tags"), PREFIXES)
def test_container_prefixes_and_ansi(line: str, ts: str, tags: str) -> None:
    (rec,) = parse([line])[1]
    assert isinstance(rec, DecodeSample)
    assert (rec.ctx.ts, rec.ctx.tags, rec.running_req) == (ts, tags, 1)


def test_quoted_format_is_not_a_decode_line() -> None:
    (rec,) = parse(['the "Decode batch, #running-req: 1, ..." line'], keep_other=True)[1]
    assert isinstance(rec, OtherLine)


def test_bad_bytes_never_raise_and_every_line_counts_once() -> None:
    p = LogParser()
    data = (b"\xff\xfe garbage \x00\x00 NUL\n"
            b"[2025-12-03 10:00:05 TP0] Decode batch, #running-req: \xc3\x28 1, #queue-req: 0, \n"
            + b"x" * (10 * 1024 * 1024) + b"\n"
            b"[2025-12-03 10:00:06 TP0] Decode batch, #running-req: 2, accept len: 1.50, #queue-req: 0")
    recs = []
    for i in range(0, len(data), 65536):
        recs += p.feed_bytes(data[i : i + 65536])
    recs += p.finish()  # the truncated last line (no newline) is still read
    decodes = [r for r in recs if isinstance(r, DecodeSample)]
    assert [d.line for d in decodes] == [2, 4]
    assert decodes[-1].accept_len == 1.50
    assert p.lines_seen == 4 and sum(p.counts.values()) == 4


def test_a_line_without_end_is_held_only_in_part() -> None:
    # a 64 MB "line" (a binary blob with no newline) arrives in 1 MB chunks; then a real line
    p = LogParser()
    blob = b"z" * (1 << 20)
    for _ in range(64):
        assert p.feed_bytes(blob) == []
    recs = p.feed_bytes(b"tail of the blob\n[2025-12-03 10:00:06] The server is fired up and ready to roll!\n")
    recs += p.finish()
    assert [type(r) for r in recs] == [Milestone] and recs[0].line == 2
    assert p.lines_seen == 2 and sum(p.counts.values()) == 2


def test_python_3_14_argparse_prog() -> None:
    (ev,) = parse(["python -m sglang.launch_server: error: unrecognized arguments: --speculative-model x"])[1]
    assert (ev.exc_type, ev.message) == ("ArgparseError", "unrecognized arguments: --speculative-model x")


def test_successful_request_lines_are_other_whatever_their_path() -> None:
    line = '[2025-12-03 10:00:05] INFO:     127.0.0.1:5 - "GET /ncclSystemError/failed/Traceback HTTP/1.1" 200 OK'
    p, recs = parse([line], keep_other=True)
    assert [type(r) for r in recs] == [OtherLine]
