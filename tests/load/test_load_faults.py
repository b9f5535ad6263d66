"""Failures, spec fields and request shapes, against a scripted local server (fake_server in conftest)."""

from __future__ import annotations

import json

import pytest
from load_kit import Reply, Seen, chat_events, fake_server, models_reply

from spectui.load import (
    BenchConfig,
    BenchConfigError,
    NotOpenAIServerError,
    ServerAuthError,
    ServerNotReadyError,
    WarmupFailedError,
    load_prompts,
    parse_prompts,
    run_bench,
)
from spectui.load.prompts import PromptSet

pytestmark = pytest.mark.timeout(30)
CHAT = load_prompts("chat")


def ok_stream(req: Seen) -> Reply:
    return Reply(events=chat_events([" a", " b c", " d"], usage=4))


async def bench(handler, **kw) -> object:
    async with fake_server(handler) as (url, seen):
        kw = {"requests": 6, "concurrency": 2, "warmup": 0, "max_tokens": 8, **kw}
        prompts = kw.pop("prompts", CHAT)
        res = await run_bench(BenchConfig(url, **kw), prompts)
        return res, seen


async def test_http_500_on_some_requests_is_counted() -> None:
    calls = {"n": 0}

    def handler(req: Seen) -> Reply:
        if req.path == "/v1/models":
            return models_reply()
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            return Reply(500, {"object": "error", "message": "scheduler hiccup", "code": 500})
        return ok_stream(req)

    res, _ = await bench(handler, requests=9)
    out = res.to_json()
    assert out["requests"]["ok"] == 6 and out["requests"]["failed"] == 3
    assert out["requests"]["errors"] == {"HTTP 500": 3}
    assert out["output_tokens"] == 6 * 4
    assert all("scheduler hiccup" in r.error_detail for r in res.records if not r.ok)
    assert out["ttft_ms"]["mean"] is not None  # over the 6 that succeeded only


@pytest.mark.parametrize(("events", "close_early", "kind"), [
    ([{"choices": [{"index": 0, "delta": {"content": "x"}}]}, {"error": {"message": "boom", "code": 400}}],
     False, "stream error 400"),
    ([{"object": "error", "message": "aborted", "code": 503}], False, "stream error 503"),
    ([{"choices": [{"index": 0, "delta": {"content": "x"}}]}], True, "IncompleteStream"),
    ([b"not json at all"], False, "BadChunk"),
    (chat_events([], usage=0), False, "NoTokens"),
])
async def test_broken_streams_have_error_kinds(events, close_early: bool, kind: str) -> None:
    def handler(req: Seen) -> Reply:
        return models_reply() if req.path == "/v1/models" else Reply(events=events, close_early=close_early)

    res, _ = await bench(handler, requests=2)
    assert res.to_json()["requests"] == {"ok": 0, "failed": 2, "errors": {kind: 2}, "not_sent": 0,
                                                "cancelled": 0}
    assert res.to_json()["output_tokens_per_s"] is None


async def test_request_body_and_spec_fields_from_sglext() -> None:
    details = {"spec_verify_ct": 2, "spec_accept_length": 2.0, "spec_accept_rate": 0.5,
               "spec_num_correct_drafts": 2, "spec_num_proposed_drafts": 4, "spec_correct_drafts_histogram": [0, 2]}

    def handler(req: Seen) -> Reply:
        if req.path == "/v1/models":
            return models_reply("served-name")
        sglext = {"object": "chat.completion.chunk", "choices": [], "sglext": {"spec_tokens_details": details}}
        return Reply(events=chat_events([" one two", " three four"], usage=4, extra=[sglext]))

    res, seen = await bench(handler, requests=2, temperature=0.7, max_tokens=4, api_key="sekret")
    body = seen[1].body
    assert seen[1].path == "/v1/chat/completions"
    assert body["model"] == "served-name" and body["max_tokens"] == 4 and body["temperature"] == 0.7
    assert body["stream"] is True and body["stream_options"]["include_usage"] is True
    assert body["return_spec_tokens_details"] is True
    assert body["messages"][-1]["role"] == "user"
    assert all(s.headers["authorization"] == "Bearer sekret" for s in seen)
    r = res.records[0]
    assert r.spec.raw == details and r.spec.sources == {"sglext"}
    assert (r.spec.verify_ct, r.spec.accepted_drafts, r.spec.proposed_drafts) == (2, 2, 4)
    assert r.spec.accept_length_from(r.output_tokens) == 2.0 and r.spec.histogram == [0, 2]
    assert res.per_request_spec()[1]["names"] == {"accepted_drafts": "spec_num_correct_drafts",
                                                  "proposed_drafts": "spec_num_proposed_drafts"}
    assert res.summary()["speculative"] is True and res.summary()["peak_output_tokens_per_s"] is None


async def test_plain_prompts_use_completions_and_old_meta_info_names() -> None:
    prompts = PromptSet("f", parse_prompts('{"prompt": "Once upon"}\n{"prompt": "a time"}\n', path="f.jsonl"), "f")

    def handler(req: Seen) -> Reply:
        if req.path == "/v1/models":
            return models_reply()
        meta = {"spec_verify_ct": 3, "spec_accept_token_num": 3, "spec_draft_token_num": 9}
        return Reply(events=[{"choices": [{"index": 0, "text": " there", "finish_reason": None}]},
                             {"choices": [{"index": 0, "text": " was", "finish_reason": "length",
                                           "meta_info": meta}]},
                             {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 6}}])

    res, seen = await bench(handler, requests=2, prompts=prompts)
    assert {s.path for s in seen[1:]} == {"/v1/completions"}
    assert seen[1].body["prompt"] in ("Once upon", "a time") and "messages" not in seen[1].body
    r = res.records[0]
    assert r.ok and r.endpoint == "completions" and r.output_tokens == 6 and r.prompt_tokens == 2
    assert (r.spec.accepted_drafts, r.spec.proposed_drafts, r.spec.accept_length) == (3, 9, None)
    assert r.spec.names["accepted_drafts"] == "spec_accept_token_num"


async def test_continuous_usage_gives_per_chunk_tokens_and_real_gaps() -> None:
    def handler(req: Seen) -> Reply:
        if req.path == "/v1/models":
            return models_reply()
        events: list[object] = [0.03]
        for i, n in enumerate((1, 3, 2, 3), 1):
            key = "reasoning_content" if i == 1 else "content"
            total = (1, 4, 6, 9)[i - 1]
            events += [{"choices": [{"index": 0, "delta": {key: "w" * n}}],
                        "usage": {"completion_tokens": total}}, 0.04]
        events.append({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}})
        return Reply(events=events)

    res, _ = await bench(handler, requests=2, concurrency=1)
    r = res.records[0]
    assert r.chunk_tokens == [1, 3, 2, 3] and r.output_tokens == 9
    assert 0.025 <= r.ttft <= 0.5  # the reasoning text, 30 ms in, is the first token
    gaps = r.chunk_gaps
    assert len(gaps) == 3 and all(0.03 <= g <= 0.5 for g in gaps)  # each chunk sent 40 ms apart
    # bench_serving's ITL: the chunks after the first carry 3, 2 and 3 tokens: each gap split over them
    assert r.itls == pytest.approx([gaps[0] / 3] * 3 + [gaps[1] / 2] * 2 + [gaps[2] / 3] * 3)
    assert r.token_counts()[1] == "server"
    assert r.decode_tokens_per_s == pytest.approx(8 / sum(gaps))
    assert r.tpot == pytest.approx((r.e2e - r.ttft) / 8)


async def test_probe_errors_are_clear() -> None:
    for reply, err, text in [
        (Reply(401, {"detail": "no key"}), ServerAuthError, "wants an API key"),
        (Reply(503, {"detail": "starting"}), ServerNotReadyError, "still starting"),
        (Reply(200, {"hello": "world"}), NotOpenAIServerError, "not an OpenAI model list"),
        (Reply(200, {"object": "list", "data": []}), NotOpenAIServerError, "lists no model"),
    ]:
        with pytest.raises(err, match=text):
            await bench(lambda req, reply=reply: reply, requests=1)


async def test_warmup_that_always_fails_stops_early() -> None:
    def handler(req: Seen) -> Reply:
        return models_reply() if req.path == "/v1/models" else Reply(400, {"message": "model not loaded"})

    with pytest.raises(WarmupFailedError, match=r"every warm-up request failed \(HTTP 400 x2\).*model not loaded"):
        await bench(handler, warmup=2)


def test_contradictory_options_are_usage_errors() -> None:
    for kw, text in [({"requests": 3, "duration_s": 2.0}, "not both"), ({"concurrency": 0}, "at least 1"),
                     ({"rate": -1.0}, "> 0"), ({"duration_s": 5.0, "concurrency": None}, "needs --concurrency"),
                     ({"max_tokens": 0}, "max-tokens")]:
        with pytest.raises(BenchConfigError, match=text) as info:
            BenchConfig("127.0.0.1:1", **kw).validate()
        assert info.value.exit_code == 2


async def test_to_json_is_json() -> None:
    res, _ = await bench(lambda req: models_reply() if req.path == "/v1/models" else ok_stream(req), requests=3)
    out = json.loads(json.dumps(res.to_json()))
    assert set(out) >= {"workload", "requests", "duration_s", "output_tokens", "output_tokens_per_s",
                        "per_request_tokens_per_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}
    assert out["output_tokens"] == 12 and out["requests"]["ok"] == 3
