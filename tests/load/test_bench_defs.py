"""bench_serving's definitions on hand-made records (expected values worked out by hand from
sglang/benchmark/serving.py's formulas), the robust per-request speed of #22, and the workloads and
request shapes of #25 against a scripted server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from load_kit import Reply, Seen, chat_events, fake_server, models_reply

from spectui.load import BenchConfig, BenchError, RequestRecord, load_prompts, run_bench, summarize
from spectui.load.datasets import Dataset, load_dataset, random_lens
from spectui.load.output import bench_serving_line
from spectui.ops.bench.run import robust_mean, speedup

pytestmark = pytest.mark.timeout(30)


def rec(i: int, chunks: list[float], end: float, tokens: int, counts: list[int | None] | None = None,
        start: float = 0.0) -> RequestRecord:
    r = RequestRecord(i, f"p{i}", "chat", False, start=start)
    r.chunk_times, r.first_token = chunks, chunks[0]
    r.chunk_tokens = counts if counts is not None else [None] * len(chunks)
    r.end, r.output_tokens, r.output_tokens_source = end, tokens, "usage"
    return r


def test_itl_splits_each_chunk_gap_over_its_tokens() -> None:
    # chunks at 0.10 (1 token), 0.16 (3), 0.20 (0: no new token), 0.28 (2): bench_serving's native loop
    # gives [0.02]*3 for the second, skips the empty one, then (0.28 - 0.16) / 2 twice
    r = rec(0, [0.10, 0.16, 0.20, 0.28], 0.3, 6, counts=[1, 3, 0, 2])
    assert r.itls == pytest.approx([0.02, 0.02, 0.02, 0.06, 0.06])
    assert r.chunk_gaps == pytest.approx([0.06, 0.04, 0.08])
    s = summarize([r], 0.0, 0.3)
    assert s["itl_ms"]["p50"] == pytest.approx(20.0) and s["itl_ms"]["max"] == pytest.approx(60.0)
    assert s["chunk_gap_ms"]["p50"] == pytest.approx(60.0)
    assert s["itl_tokens_source"] == "server"
    # std is the population one (numpy.std): values 20,20,20,60,60 -> mean 36, var 384
    assert s["itl_ms"]["std"] == pytest.approx(384 ** 0.5, abs=1e-3)


def test_one_chunk_answers_cannot_inflate_per_request_speed() -> None:
    # #22: a request whose tokens all came in one chunk divided by ~0 and gave a mean of 22,637 tok/s
    # against a p50 of 1,103. Now: no decode interval, no speed; a 1 µs interval weighs 1 µs.
    normal = [rec(i, [0.1 + i, 0.2 + i, 0.3 + i], 0.31 + i, 21, counts=[1, 10, 10], start=float(i))
              for i in range(4)]  # 20 tokens in 0.2 s: 100 tok/s
    one_chunk = rec(9, [0.5], 0.5000001, 40, counts=[40])
    blip = rec(10, [0.5, 0.500001], 0.50001, 5, counts=[1, 4])  # 4 tokens in 1 µs
    assert one_chunk.decode_tokens_per_s is None and one_chunk.tpot is not None  # TPOT stays bench_serving's
    per = summarize([*normal, one_chunk, blip], 0.0, 4.0)["per_request_tokens_per_s"]
    assert per["mean"] == pytest.approx((4 * 20 + 4) / (4 * 0.2 + 1e-6), rel=1e-4)  # ~105, not ~800,000
    assert per["p50"] == pytest.approx(100.0) and per["requests"] == 5
    assert per["definition"] == "decode_tokens_over_decode_time"
    up = speedup({"output_tokens_per_s": 200.0, "per_request_tokens_per_s": per},
                 {"output_tokens_per_s": 100.0, "per_request_tokens_per_s": {"mean": 70.0}})
    assert up == {"output_tokens_per_s": 2.0, "per_request_tokens_per_s": pytest.approx(per["mean"] / 70, abs=1e-3)}


def test_history_means_of_the_old_definition_give_no_speedup() -> None:
    assert robust_mean({"per_request_tokens_per_s": {"mean": 22637.0, "p50": 1103.0}}) is None
    assert robust_mean({"per_request_tokens_per_s": {"mean": 90.0, "definition":
                                                     "decode_tokens_over_decode_time"}}) == 90.0


def test_throughputs_concurrency_and_goodput_as_bench_serving() -> None:
    a = rec(0, [0.1, 0.5], 1.0, 10, counts=[1, 9])  # ttft 100 ms, tpot (1.0-0.1)/9 = 100 ms, e2e 1000 ms
    b = rec(1, [0.4, 0.6], 2.0, 5, counts=[1, 4], start=0.0)  # ttft 400 ms, tpot 400 ms, e2e 2000 ms
    a.prompt_tokens, b.prompt_tokens = 30, 50
    failed = RequestRecord(2, "p2", "chat", False, start=0.0, end=0.2, error="HTTP 500")
    s = summarize([a, b, failed], 0.0, 2.0, goodput={"ttft": 200.0, "e2el": 1500.0})
    assert (s["input_tokens"], s["input_tokens_per_s"], s["total_tokens_per_s"]) == (80, 40.0, 47.5)
    assert s["requests_per_s"] == 1.0  # completed / duration
    assert s["concurrency"] == pytest.approx(1.5)  # Σ e2e / duration
    g = s["goodput"]
    assert g["request_goodput"] == 0.5  # only `a` meets both
    assert g["slo_attainment"] == pytest.approx(1 / 3, abs=1e-4)  # over the requests sent, failed included
    assert g["slo_attainment_by_metric"] == {"ttft": pytest.approx(1 / 3, abs=1e-4),
                                             "e2el": pytest.approx(1 / 3, abs=1e-4)}


def test_random_dataset_lengths_and_seed(tmp_path: Path) -> None:
    ds = Dataset("random", 50, random_input_len=40, random_output_len=16, random_range_ratio=0.5, seed=7)
    got = load_dataset(ds)
    assert len(got) == 50 and got.name == "random:40:16:0.5"
    assert all(20 <= p.input_len <= 40 and 8 <= p.output_len <= 16 for p in got.prompts)
    assert all(len(p.text.split()) == p.input_len for p in got.prompts)  # one word a token
    assert len({p.input_len for p in got.prompts}) > 5  # drawn, not fixed
    assert [p.text for p in load_dataset(ds).prompts] == [p.text for p in got.prompts]  # seeded
    assert [p.text for p in load_dataset(Dataset("random", 50, seed=8)).prompts] != [p.text for p in got.prompts]
    assert random_lens(10, 0.0, 200, random.Random(1)) and min(random_lens(10, 0.0, 200, random.Random(1))) >= 1
    fixed = load_dataset(Dataset("random", 5, random_input_len=12, random_output_len=3, random_range_ratio=1.0))
    assert {(p.input_len, p.output_len) for p in fixed.prompts} == {(12, 3)}


def test_sharegpt_from_a_local_file(tmp_path: Path) -> None:
    convs = [{"conversations": [{"from": "human", "value": "Explain the rainbow to me in detail."},
                                {"from": "gpt", "value": "x" * 400}]},
             {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello there"}]},
             {"conversation": [{"role": "user", "content": "Write a haiku about the sea."},
                               {"role": "assistant", "content": "y" * 80}]},
             {"conversations": [{"from": "human", "value": "only one turn"}]}]
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(convs))
    got = load_dataset(Dataset("sharegpt", 10, path=str(path)))
    texts = sorted(p.text for p in got.prompts)
    assert texts == ["Explain the rainbow to me in detail.", "Write a haiku about the sea."]  # "hi" < 2 tokens
    assert sorted(p.output_len for p in got.prompts) == [20, 100]  # 80 and 400 characters, ~4 a token
    fixed = load_dataset(Dataset("sharegpt", 10, path=str(path), sharegpt_output_len=7))
    assert {p.output_len for p in fixed.prompts} == {7}
    jsonl = tmp_path / "sg.jsonl"
    jsonl.write_text("\n".join(json.dumps(c) for c in convs))
    assert len(load_dataset(Dataset("sharegpt", 10, path=str(jsonl)))) == 2


def stream(req: Seen) -> Reply:
    return models_reply() if req.path == "/v1/models" else Reply(events=chat_events([" a", " b"], usage=2))


async def test_lengths_extra_body_headers_and_flush_cache_reach_the_server() -> None:
    prompts = load_dataset(Dataset("random", 4, random_input_len=6, random_output_len=9, random_range_ratio=1.0))
    async with fake_server(lambda req: Reply(body={"ok": True}) if req.path.startswith("/flush_cache")
                           else stream(req)) as (url, seen):
        cfg = BenchConfig(url, requests=4, concurrency=2, warmup=1, ignore_eos=True, extra_body={"top_p": 0.5},
                          extra_headers={"X-Route": "a1"}, flush_cache=True)
        res = await run_bench(cfg, prompts)
    paths = [s.path for s in seen]
    flush = paths.index("/flush_cache?timeout=60")
    assert paths[flush - 1] == "/v1/completions" and paths[flush + 1:] == ["/v1/completions"] * 4  # after warm-up
    sent = [s for s in seen if s.path == "/v1/completions"]
    assert all(s.body["max_tokens"] == 9 and s.body["ignore_eos"] is True and s.body["top_p"] == 0.5 for s in sent)
    assert all(len(s.body["prompt"].split()) == 6 for s in sent)
    assert all(s.headers["x-route"] == "a1" for s in sent)
    out = res.to_json()
    assert out["workload"]["headers"] == ["X-Route"] and "a1" not in json.dumps(out)  # names only


async def test_a_refused_flush_cache_is_a_clear_error() -> None:
    async with fake_server(lambda req: Reply(404, {"detail": "Not Found"}) if req.path.startswith("/flush")
                           else stream(req)) as (url, _):
        with pytest.raises(BenchError, match=r"--flush-cache: POST .*/flush_cache answered HTTP 404"):
            await run_bench(BenchConfig(url, requests=2, warmup=0, flush_cache=True), load_prompts("chat"))


def test_output_line_has_bench_serving_names() -> None:
    out = {"workload": {"prompts": "random:8:4:1", "rate": None, "concurrency": 4}, "requests": {"ok": 3},
           "duration_s": 2.0, "output_tokens": 12, "output_tokens_per_s": 6.0, "input_tokens": 24,
           "input_tokens_per_s": 12.0, "total_tokens_per_s": 18.0, "requests_per_s": 1.5, "concurrency": 2.5,
           "ttft_ms": {"mean": 5.0, "p50": 4.0, "p90": 6.0, "p95": 7.0, "p99": 8.0, "std": 1.0, "max": 9.0},
           "itl_ms": {"mean": 1.0, "p50": 1.0}, "spec": {"accept_len": 2.5}, "peak_output_tokens_per_s": None}
    line = bench_serving_line(out, dataset={"dataset_name": "random", "random_input_len": 8})
    assert line["backend"] == "spectui" and line["dataset_name"] == "random" and line["random_input_len"] == 8
    assert (line["median_ttft_ms"], line["p95_ttft_ms"], line["std_ttft_ms"], line["max_ttft_ms"]) == (4.0, 7.0, 1.0, 9.0)
    assert (line["output_throughput"], line["request_throughput"], line["total_throughput"]) == (6.0, 1.5, 18.0)
    assert line["median_itl_ms"] == 1.0 and line["accept_length"] == 2.5 and line["concurrency"] == 2.5
    assert line["completed"] == 3 and line["max_concurrency"] == 4 and line["request_rate"] == float("inf")
    assert line["spectui"] is out


def test_the_header_names_the_server_that_runs_after_a_baseline(capsys) -> None:
    from spectui.commands.bench import _table

    dist = {"mean": 1.0, "p50": 1.0}
    out = {"server": {"pid": 111, "now_pid": 333, "port": 30000, "sglang_version": "0.5.16",
                      "speculative": {"speculative_algorithm": "NGRAM"}},
           "workload": {"prompts": "mixed", "requests": 8, "concurrency": 4, "rate": None, "max_tokens": 32,
                        "temperature": 0.0, "model": "m"},
           "requests": {"ok": 8, "failed": 0}, "duration_s": 1.0, "output_tokens": 256, "output_tokens_per_s": 256.0,
           "per_request_tokens_per_s": {"mean": 80.0, "p50": 79.0}, "ttft_ms": dist, "tpot_ms": dist,
           "itl_ms": dist, "e2e_ms": dist, "spec": None, "baseline": None, "speedup": None, "history_id": "h",
           "baseline_run": {"unset": ["--speculative-algorithm"], "baseline_pid": 222, "baseline": None,
                            "restored": {"pid": 333, "healthy": True, "speculative_algorithm": "NGRAM"}}}
    _table(out)
    text = " ".join(capsys.readouterr().out.split())  # a narrow console wraps the line
    assert text.startswith("measured pid 111 (stopped for the baseline; the speculative command runs again as "
                           "pid 333)")


def test_generated_shared_prefix_groups_share_their_system_prompt() -> None:
    ds = Dataset("generated-shared-prefix", 1, gsp_num_groups=3, gsp_prompts_per_group=4, gsp_system_prompt_len=50,
                 gsp_question_len=6, gsp_output_len=9, seed=3)
    got = load_dataset(ds)
    assert len(got) == 12 and {p.output_len for p in got.prompts} == {9}  # range ratio 1.0: fixed lengths
    prefixes = {p.id.split("-")[1]: set() for p in got.prompts}
    for p in got.prompts:
        head, _, question = p.text.partition("\n\n")
        assert len(head.split()) == 50 and len(question.split()) == 6 and p.input_len == 56
        prefixes[p.id.split("-")[1]].add(head)
    assert all(len(v) == 1 for v in prefixes.values()) and len({next(iter(v)) for v in prefixes.values()}) == 3
