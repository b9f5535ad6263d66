"""LogParser on real SGLang lines from tests/data/corpus (source URL cited beside each case)."""

from __future__ import annotations

import pytest

from spectui.core.log import (
    DecodeSample,
    ErrorEvent,
    LogParser,
    Milestone,
    MilestoneKind,
    PrefillSample,
    WarningEvent,
)


def parse(lines: list[str]) -> tuple[LogParser, list]:
    p = LogParser()
    return p, p.feed(lines) + p.finish()


def one(line: str):
    _, recs = parse([line])
    assert len(recs) == 1, recs
    return recs[0]


# (corpus file, log line number, expected fields) — the line's source URL is in the comment.
DECODE_CASES = [
    # https://github.com/sgl-project/sglang/issues/4407 — "Decode batch." with an unknown "largest-len" field
    ("001", 1, dict(running_req=509, tokens=180776, token_usage=0.43, accept_len=None, graph=None,
                    gen_tokens_per_s=7897.87, queue_req=0, ts="2025-03-14 02:16:14", tags="TP0"),
     {"largest-len": "0"}),
    # https://github.com/sgl-project/sglang/pull/6081 — DP attention, one line per DP rank
    ("003", 2, dict(running_req=8, tokens=36267, token_usage=0.12, accept_len=2.86, graph=True,
                    gen_tokens_per_s=168.28, queue_req=0, dp_rank=6, tp_rank=6, tags="DP6 TP6"), {}),
    # https://github.com/sgl-project/sglang/pull/30393 — PD decode fields, accept rate
    ("004", 5, dict(running_req=3, tokens=331904, accept_len=1.72, accept_rate=0.14, graph=True,
                    gen_tokens_per_s=183.75, queue_req=0),
     {"pre-allocated usage": "0.33", "#prealloc-req": "0", "#transfer-req": "3", "#retracted-req": "0"}),
    # https://github.com/sgl-project/sglang/pull/21723 — python-logging prefix, hybrid mamba fields
    ("008", 1, dict(running_req=2, tokens=5046, token_usage=0.01, accept_len=2.64, accept_rate=0.66, graph=True,
                    gen_tokens_per_s=242.08, queue_req=0, tp_rank=0, ts="2026-03-18 11:22:05"),
     {"mamba num": "2", "mamba usage": "0.08", "#full token": "5046"}),
    # https://github.com/mit-han-lab/fastrl/pull/4 — python-logging prefix without tags, trailing ", "
    ("036", 1, dict(running_req=48, tokens=3894, accept_len=1.00, accept_rate=0.11, graph=False,
                    gen_tokens_per_s=5452.63, queue_req=0, tp_rank=None), {}),
    # https://github.com/sgl-project/SpecForge/pull/269 — no tags at all
    ("051", 7, dict(running_req=1, tokens=112, accept_len=2.19, graph=True, gen_tokens_per_s=258.07,
                    queue_req=0, tags=""), {}),
    # https://github.com/sgl-project/sglang/issues/938 — bare message, no prefix at all
    ("062", 1, dict(running_req=1010, tokens=55006, token_usage=0.93, gen_tokens_per_s=1397.13,
                    queue_req=12279, ts=None), {}),
    # https://github.com/sgl-project/sglang/pull/22331 — "Decode batch," without trailing comma
    ("064", 8, dict(running_req=5, tokens=20800, token_usage=0.29, graph=True, gen_tokens_per_s=157.11,
                    queue_req=0), {}),
    # https://github.com/Gen-Verse/OpenClaw-RL/issues/44 — Ray actor prefix, trailing ","
    ("066", 7, dict(running_req=6, tokens=43854, token_usage=0.04, graph=True, gen_tokens_per_s=1370.83,
                    queue_req=0, tp_rank=0, ts="2026-03-22 13:53:38"), {}),
]


@pytest.mark.parametrize(("prefix", "n", "want", "extra"), DECODE_CASES, ids=[c[0] for c in DECODE_CASES])
def test_real_decode_lines(corpus, prefix: str, n: int, want: dict, extra: dict) -> None:
    rec = one(corpus(prefix).line(n))
    assert isinstance(rec, DecodeSample)
    for key, value in want.items():
        if key in ("ts", "tags", "dp_rank", "tp_rank"):
            assert getattr(rec.ctx, key) == value, key
        else:
            assert getattr(rec, key) == value, key
    for key, value in extra.items():
        assert rec.fields[key] == value  # unknown fields are kept verbatim, never dropped


PREFILL_CASES = [
    # https://github.com/sgl-project/sglang/issues/2777 — "cache hit rate" field (Jan 2025)
    ("049", 3, dict(new_seq=1, new_token=75, cached_token=0, token_usage=0.01, running_req=1, queue_req=62),
     {"cache hit rate": "0.00%"}),
    # https://github.com/sgl-project/SpecForge/pull/269
    ("051", 4, dict(new_seq=1, new_token=22, cached_token=24, running_req=0, queue_req=0), {}),
    # https://github.com/sgl-project/sglang/issues/11648 — PD prefill node, DP/TP/EP tags
    ("054", 1, dict(new_seq=1, new_token=512, queue_req=7, input_tokens_per_s=1367.19),
     {"#unbootstrapped-req": "0", "#transferring-req": "1"}),
]


@pytest.mark.parametrize(("prefix", "n", "want", "extra"), PREFILL_CASES, ids=[c[0] for c in PREFILL_CASES])
def test_real_prefill_lines(corpus, prefix: str, n: int, want: dict, extra: dict) -> None:
    rec = one(corpus(prefix).line(n))
    assert isinstance(rec, PrefillSample)
    for key, value in want.items():
        assert getattr(rec, key) == value, key
    for key, value in extra.items():
        assert rec.fields[key] == value


MILESTONE_CASES = [
    # https://github.com/sgl-project/sglang/issues/1479 — 2024 "[HH:MM:SS TPn]" prefix
    ("006", 1, MilestoneKind.WEIGHTS_LOADED, {"type": "DeepseekV2ForCausalLM"}, "23:17:01", 7),
    ("006", 2, MilestoneKind.MEMORY_POOL_END, {"avail_mem": 18.61}, "23:17:01", 6),
    ("006", 10, MilestoneKind.GRAPH_CAPTURE_BEGIN, {"graph": "cuda"}, "23:17:01", 3),
    # https://github.com/sgl-project/sglang/pull/14280 — custom all-reduce, python-logging prefix: capture under way
    ("039", 1, MilestoneKind.GRAPH_CAPTURE_BEGIN, {"graph": "cuda", "registered_addresses": 0}, "2025-12-02 14:56:33", 0),
    # https://github.com/sgl-project/sglang/pull/11830
    ("044", 2, MilestoneKind.KV_ALLOCATED, {"tokens": 2243474}, "2025-11-30 12:50:10", None),
    ("044", 8, MilestoneKind.GRAPH_CAPTURE_END, {"mem_usage": 1.44, "avail_mem": 38.05}, "2025-11-30 12:50:15", None),
    # https://github.com/sgl-project/sglang/pull/29853 — 2026 KV line with dtype
    ("046", 3, MilestoneKind.KV_ALLOCATED, {"tokens": 387968, "dtype": "torch.bfloat16"}, "2026-07-01 15:19:55", 10),
    # https://github.com/sgl-project/sglang/issues/744 — mid-2024 "[gpu_id=N]" prefix, capacity line
    ("061", 7, MilestoneKind.CAPACITY, {"max_running_requests": 5124, "max_total_num_tokens": 328021}, None, 0),
]


@pytest.mark.parametrize(("prefix", "n", "kind", "detail", "ts", "tp"), MILESTONE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in MILESTONE_CASES])
def test_real_milestones(corpus, prefix: str, n: int, kind: MilestoneKind, detail: dict, ts: str | None, tp: int | None) -> None:
    rec = one(corpus(prefix).line(n))
    assert isinstance(rec, Milestone)
    assert rec.kind is kind
    for key, value in detail.items():
        assert rec.detail[key] == value
    assert rec.ctx.ts == ts
    assert rec.ctx.tp_rank == tp


def test_real_server_args_line_truncated_keeps_complete_pairs(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/8974 — the line is cut mid-value in the excerpt
    cf = corpus("017")
    _, recs = parse(cf.lines)
    (ms,) = [r for r in recs if isinstance(r, Milestone)]
    assert ms.kind is MilestoneKind.SERVER_ARGS
    assert ms.detail["max_running_requests"] == 48
    assert ms.detail["model_path"] == "/data/GLM-4.5"
    assert ms.detail["skip_tokenizer_init"] is False
    assert ms.detail["context_length"] is None
    assert ms.detail["mem_fraction_static"] == 0.7
    assert "swa_full_" not in " ".join(ms.detail)  # the cut-off last pair is dropped, not guessed


def test_real_bare_pre_logging_warning(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/8974 — bare override notice before any [ts] line
    cf = corpus("017")
    _, recs = parse(cf.lines)
    (w,) = [r for r in recs if isinstance(r, WarningEvent)]
    assert w.text == "Overlap scheduler is disabled because of using eagle speculative decoding."
    assert w.category == "resolution"
    assert w.line == 10


ERROR_CASES = [
    # https://github.com/sgl-project/sglang/issues/9135 (AngelSlim #39) — tail of a traceback, KeyError
    ("023", "KeyError", "'midlayer.self_attn.qkv_proj.weight'", 1, 3),
    # https://github.com/sgl-project/sglang/issues/38236 — AssertionError with a message
    ("048", "AssertionError", "Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM",
     1, 2),
    # https://github.com/sgl-project/sglang/issues/4289 — excerpt starts mid-traceback
    ("031", "RuntimeError", "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", 1, 6),
    # https://github.com/sgl-project/sglang/issues/24215 — trailing blanks after the message
    ("037", "RuntimeError", "Sizes of tensors must match except in dimension 0. Expected size 4096 but got size 2048 "
     "for tensor number 1 in the list.", 1, 1),
    # https://github.com/sgl-project/sglang/issues/5285 — plain top-level "Traceback" at line start
    ("029", "Exception", "Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a "
     "total capacity of 95.00", 1, 8),
    # https://github.com/sgl-project/sglang/issues/4547
    ("058", "RuntimeError", "CUDA error: out of memory", 1, 5),
    # https://github.com/sgl-project/sglang/issues/12818 — argparse error, no usage block in the excerpt
    ("022", "ArgparseError", "unrecognized arguments: --reasoning_parser kimi_k2", 1, 0),
]


@pytest.mark.parametrize(("prefix", "exc_type", "message", "first", "frames"), ERROR_CASES,
                         ids=[c[0] for c in ERROR_CASES])
def test_real_errors_one_event_each(corpus, prefix: str, exc_type: str, message: str, first: int, frames: int) -> None:
    cf = corpus(prefix)
    parser, recs = parse(cf.lines)
    errors = [r for r in recs if isinstance(r, ErrorEvent)]
    assert len(errors) == 1, errors
    ev = errors[0]
    assert (ev.exc_type, ev.message) == (exc_type, message)
    assert ev.line == first
    assert len(ev.frames) == frames
    # every line counted once: the event's first line as error, its continuation lines as other
    assert sum(parser.counts.values()) == parser.lines_seen == len(cf.lines)


def test_real_scheduler_traceback_grouped_with_frames(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/30354 — SIGQUIT line, then a TP4 EP4 scheduler traceback
    cf = corpus("012")
    _, recs = parse(cf.lines)
    sigquit, tb = [r for r in recs if isinstance(r, ErrorEvent)]
    assert sigquit.exc_type == "SIGQUIT" and sigquit.line == 1
    assert tb.line == 3 and tb.end_line == len(cf.lines)
    assert tb.ctx.tags == "TP4 EP4" and tb.ctx.tp_rank == 4
    assert tb.headline.startswith("Scheduler hit an exception: Traceback")
    assert [f.func for f in tb.frames][:3] == ["run_scheduler_process", "run_event_loop", "dispatch_event_loop"]
    assert tb.frames[0].source == "scheduler.run_event_loop()"
    assert tb.exc_type == "Traceback"  # the excerpt ends before the exception line: truncated, said so


def test_real_ray_prefixed_traceback(corpus) -> None:
    # https://github.com/mit-han-lab/fastrl/issues/8 — every line carries "(WorkerDict pid=...)"
    cf = corpus("047")
    _, recs = parse(cf.lines)
    (ev,) = recs
    assert isinstance(ev, ErrorEvent)
    assert ev.frames[0].func == "run_scheduler_process"
    assert ev.end_line == len(cf.lines)


def test_real_old_exception_in_run_tp_server_joins_its_traceback(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/1479 — "Exception in run_tp_server:" then the traceback
    cf = corpus("006")
    _, recs = parse(cf.lines)
    (ev,) = [r for r in recs if isinstance(r, ErrorEvent)]
    assert ev.line == 18 and ev.ctx.tp_rank == 4
    assert ev.headline == "Exception in run_tp_server:"
    assert ev.frames[0].func == "__init__"


def test_real_one_line_errors(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/5448 — sigquit from a child during launch
    assert one(corpus("027").line(1)).exc_type == "SIGQUIT"
    # https://github.com/sgl-project/sglang/issues/3932 — k8s RFC3339 prefix + torch ProcessGroupNCCL watchdog
    rec = one(corpus("033").line(1))
    assert isinstance(rec, ErrorEvent) and rec.exc_type in ("Watchdog", "NCCL")
    # https://github.com/sgl-project/sglang/issues/36495 — native abort
    assert one(corpus("067").line(2)).exc_type == "FatalPythonError"
    # https://github.com/sgl-project/sglang/issues/3024 — device-side assert
    assert one(corpus("053").line(2)).exc_type == "DeviceAssert"


def test_real_level_prefixed_warning(corpus) -> None:
    # https://github.com/sgl-project/sglang/pull/17643 — MindSpore "[WARNING] ME(...)" line
    rec = one(corpus("014").line(1))
    assert isinstance(rec, WarningEvent) and rec.category == "level"


def test_real_usage_block_is_a_launch_milestone(corpus) -> None:
    # https://github.com/sgl-project/sglang/issues/4116 — argparse usage dump (error line not in the excerpt)
    cf = corpus("020")
    _, recs = parse(cf.lines)
    assert [type(r) for r in recs] == [Milestone]
    assert recs[0].kind is MilestoneKind.ARGPARSE_USAGE and recs[0].line == 2
