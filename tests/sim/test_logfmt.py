"""The simulator's line formats reproduce real SGLang lines (tests/data/corpus) and docs/REFERENCE.md §3 templates."""

from __future__ import annotations

import pytest

from spectui.sim.logfmt import LogFormat


def _msg(line: str) -> str:
    return line.split("] ", 1)[1]


def test_decode_and_prefill_in_the_2025_dot_format() -> None:
    # https://github.com/sgl-project/SpecForge/pull/269 (corpus 051; "Decode batch." + trailing ", ", no accept rate)
    real_prefill = ("[2025-11-04 08:41:02] Prefill batch. #new-seq: 1, #new-token: 63, #cached-token: 0, "
                    "token usage: 0.00, #running-req: 0, #queue-req: 0, ")
    real_decode = ("[2025-11-04 08:41:02] Decode batch. #running-req: 1, #token: 0, token usage: 0.00, "
                   "accept len: 1.86, cuda graph: True, gen throughput (token/s): 4.27, #queue-req: 0, ")
    fmt = LogFormat("0.5.2")
    assert fmt.prefill(counter=1, new_seq=1, new_token=63, cached=0, usage=0.0, running=0, queue=0, graph=False,
                       input_tps=0) == _msg(real_prefill)
    assert fmt.decode(counter=2, running=1, tokens=0, usage=0.0, accept_len=1.86, steps=3, draft_tokens=4,
                      graph=True, gen_tps=4.27, queue=0) == _msg(real_decode)


def test_decode_in_the_2026_comma_format_without_speculation() -> None:
    # https://github.com/sgl-project/sglang/pull/22331 (corpus 064; "Decode batch," and no trailing comma)
    real = ("[2026-04-08 14:05:21 TP0] Decode batch, #running-req: 5, #token: 20800, token usage: 0.29, "
            "cuda graph: True, gen throughput (token/s): 144.95, #queue-req: 0")
    fmt = LogFormat("0.5.10", tp_size=8)
    assert fmt.decode(counter=9, running=5, tokens=20800, usage=0.29, accept_len=None, steps=None,
                      draft_tokens=None, graph=True, gen_tps=144.95, queue=0) == _msg(real)
    assert fmt.sched("x").endswith(" TP0] x")


def test_decode_with_speculation_and_trailing_comma_on_055_to_058() -> None:
    # https://github.com/mit-han-lab/fastrl/pull/4 (corpus 036) shows "accept len: …, accept rate: …, cuda graph:"
    line = LogFormat("0.5.6.post2").decode(counter=1, running=48, tokens=3894, usage=0.0, accept_len=1.0, steps=3,
                                           draft_tokens=4, graph=False, gen_tps=5452.63, queue=0)
    assert line == ("Decode batch, #running-req: 48, #token: 3894, token usage: 0.00, accept len: 1.00, "
                    "accept rate: 0.25, cuda graph: False, gen throughput (token/s): 5452.63, #queue-req: 0, ")


def test_054_always_shows_the_iteration_counter() -> None:
    line = LogFormat("0.5.4.post3").decode(counter=120, running=1, tokens=10, usage=0.0, accept_len=2.0, steps=3,
                                           draft_tokens=4, graph=True, gen_tps=1.0, queue=0)
    assert line.startswith("Decode batch [120], #running-req: 1,")


@pytest.mark.parametrize(("version", "expected"), [
    ("0.5.4.post3", 2.4 / 4),  # accept_len / (steps + 1)
    ("0.5.6.post2", 2.4 / 8),  # accept_len / num_draft_tokens
    ("0.5.10", 2.4 / 8),
    ("0.5.23", 1.4 / 7),  # (accept_len - 1) / (num_draft_tokens - 1)
])
def test_accept_rate_formula_follows_the_release(version: str, expected: float) -> None:
    assert LogFormat(version).accept_rate(2.4, 3, 8) == pytest.approx(expected)


def test_prefill_field_order_by_release() -> None:
    kw = dict(counter=1, new_seq=1, new_token=63, cached=0, usage=0.0, running=0, queue=0, graph=False,
              input_tps=1234.5)
    assert LogFormat("0.5.10").prefill(**kw).endswith("#queue-req: 0, cuda graph: False, input throughput (token/s): 1234.50")
    assert LogFormat("0.5.23").prefill(**kw).endswith(
        "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 1234.50")


def test_milestones_old_and_new_shapes() -> None:
    old, new = LogFormat("0.5.6.post2"), LogFormat("0.5.23")
    assert old.weights_end("LlamaForCausalLMEagle3", 1.5, 60.0, 1.9) == (
        "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=1.90 GB.")
    assert new.weights_end("LlamaForCausalLMEagle3", 1.5, 60.0, 1.9) == (
        "Load weight end. elapsed=1.50 s, type=LlamaForCausalLMEagle3, avail mem=60.00 GB, mem usage=1.90 GB.")
    assert old.capture_begin("target", 39.48, [1, 2], 4)[0] == (
        "Capture cuda graph begin. This can take up to several minutes. avail mem=39.48 GB")
    assert new.capture_begin("target", 39.48, [1, 2], 4)[0] == (
        "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=39.48 GB")
    assert old.server_args({"a": "x", "b": None}) == "server_args=ServerArgs(a='x', b=None)"
    assert new.server_args({"a": "x", "b": None}) == "server_args={'a': 'x', 'b': None}"


def test_uvicorn_and_access_lines() -> None:
    fmt = LogFormat("0.5.6.post2", clock=lambda: 0.0)
    assert fmt.access("127.0.0.1:51234", "GET", "/get_model_info", 200, "OK").endswith(
        '] INFO:     127.0.0.1:51234 - "GET /get_model_info HTTP/1.1" 200 OK')
    assert fmt.uvicorn_startup(12345, "0.0.0.0", 30000)[-1].endswith(
        "] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
