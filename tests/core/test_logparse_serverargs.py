"""server_args= lines: the Python repr parsed into a dict safely (literals only, never evaluated)."""

from __future__ import annotations

from spectui.core.log import parse_server_args


def test_repr_with_quotes_commas_nested_values() -> None:
    text = (
        "ServerArgs(model_path='/m/a, b', tokenizer_path=\"/t's\", port=30000, mem_fraction_static=0.85, "
        "trust_remote_code=True, context_length=None, cuda_graph_bs=[1, 2, 4, 8], "
        "json_model_override_args='{\"a\": [1, 2]}', lora_paths={'x': '/l,1', 'y': ('p', 2)}, "
        "speculative_algorithm='EAGLE3', speculative_num_draft_tokens=4, weird=-1e-05)"
    )
    d = parse_server_args(text)
    assert d == {
        "model_path": "/m/a, b",
        "tokenizer_path": "/t's",
        "port": 30000,
        "mem_fraction_static": 0.85,
        "trust_remote_code": True,
        "context_length": None,
        "cuda_graph_bs": [1, 2, 4, 8],
        "json_model_override_args": '{"a": [1, 2]}',
        "lora_paths": {"x": "/l,1", "y": ("p", 2)},
        "speculative_algorithm": "EAGLE3",
        "speculative_num_draft_tokens": 4,
        "weird": -1e-05,
    }


def test_dict_form_of_0_5_20_and_later() -> None:
    d = parse_server_args("{'model_path': '/m', 'speculative_eagle_topk': 1, 'enable_x': False, 'bs': [1, 2]}")
    assert d == {"model_path": "/m", "speculative_eagle_topk": 1, "enable_x": False, "bs": [1, 2]}


def test_non_literal_values_are_kept_as_text_never_evaluated(tmp_path) -> None:
    marker = tmp_path / "pwned"
    text = (f"ServerArgs(device=device(type='cuda'), evil=__import__('os').system('touch {marker}'), "
            "dtype=<Dtype.AUTO: 'auto'>, port=1)")
    d = parse_server_args(text)
    assert d is not None
    assert d["device"] == "device(type='cuda')"
    assert d["evil"].startswith("__import__")
    assert d["port"] == 1
    assert not marker.exists()
    d2 = parse_server_args("{'a': 1, 'b': __import__('os').getcwd(), 'c': [1, 2]}")
    assert d2 == {"a": 1, "b": "__import__('os').getcwd()", "c": [1, 2]}


def test_cut_short_keeps_only_complete_pairs() -> None:
    assert parse_server_args("ServerArgs(a=1, b='x, y', c=[1, 2") == {"a": 1, "b": "x, y"}
    assert parse_server_args("ServerArgs(a=1, b='unterminated") == {"a": 1}
    assert parse_server_args("{'a': 1, 'b': 2, 'c': 'x") == {"a": 1, "b": 2}


def test_not_a_server_args_value() -> None:
    assert parse_server_args("something else") is None
    assert parse_server_args("ServerArgs(") == {}


# --- which server_args= line is the effective config -------------------------------------------------------
# 0.5.19+ logs `server_args={...}` = resolved_dict() after resolution; 0.5.23's Python Engine(...) API logs one
# more `server_args={...}` in Engine.__init__ BEFORE resolution, with the parsed values. <= 0.5.18 logs
# `server_args=ServerArgs(...)` after __post_init__ (resolved). The values are what spectui's resolver gives
# for the launch (it agrees with real SGLang on tests/data/resolution): parsed = server_args, resolved = effective.
def _pair() -> tuple[dict, dict]:
    from spectui.core.launch import resolve

    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
                   "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                   "--speculative-num-draft-tokens", "8"], "0.5.23", model_arch="LlamaForCausalLM")
    assert res.server_args is not None and res.effective is not None
    return dict(res.server_args), dict(res.effective)


def _decode(n: int) -> list[str]:
    return [f"[2026-11-30 14:23:{i:02d} TP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, "
            "accept len: 2.10, accept rate: 0.70, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0, "
            for i in range(n)]


def _run(lines: list[str]):
    from spectui.core.log import Pipeline
    from spectui.core.rules import RuleEngine

    engine = RuleEngine([])
    pipe = Pipeline(engine=engine)
    pipe.feed_lines(lines)
    pipe.finish()
    return pipe, engine


ADJUST = "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"


def test_looks_resolved_tells_the_parsed_line_from_the_resolved_one() -> None:
    from spectui.core.log import looks_resolved, prefer_server_args, unresolved_fields

    parsed, resolved = _pair()
    assert not looks_resolved(parsed) and "speculative_num_draft_tokens" not in unresolved_fields(parsed)
    assert set(unresolved_fields(parsed)) == {"page_size", "max_running_requests"}
    assert looks_resolved(resolved)
    assert prefer_server_args(parsed, resolved) is resolved
    assert prefer_server_args(resolved, parsed) is resolved  # the other order
    assert prefer_server_args(None, parsed) is parsed


def test_engine_api_pair_is_one_launch_with_the_resolved_values() -> None:
    parsed, resolved = _pair()
    lines = [f"[2026-11-30 14:22:10] server_args={parsed!r}", f"[2026-11-30 14:22:11] {ADJUST}",
             f"[2026-11-30 14:22:12] server_args={resolved!r}", *_decode(3)]
    pipe, engine = _run(lines)
    assert pipe.snapshot.launch == 1
    assert pipe.snapshot.server_args is not None
    assert pipe.snapshot.server_args["speculative_num_draft_tokens"] == 4
    assert pipe.snapshot.server_args["max_running_requests"] == 48
    assert engine._config.effective("speculative_num_draft_tokens") == 4


def test_pair_in_the_other_order_still_takes_the_resolved_values() -> None:
    parsed, resolved = _pair()
    lines = [f"[2026-11-30 14:22:10] server_args={resolved!r}", f"[2026-11-30 14:22:12] server_args={parsed!r}",
             *_decode(2)]
    pipe, engine = _run(lines)
    assert pipe.snapshot.launch == 1 and pipe.snapshot.server_args is not None
    assert pipe.snapshot.server_args["speculative_num_draft_tokens"] == 4
    assert engine._config.effective("max_running_requests") == 48


def test_serverargs_repr_form_and_pylogging_prefix() -> None:
    parsed, resolved = _pair()
    body = ", ".join(f"{k}={v!r}" for k, v in resolved.items())
    for line in (f"[2025-12-03 10:00:00] server_args=ServerArgs({body})",
                 f"INFO:sglang.srt.entrypoints.engine:server_args={resolved!r}"):
        pipe, engine = _run([line, *_decode(2)])
        assert pipe.snapshot.server_args is not None, line
        assert pipe.snapshot.server_args["speculative_num_draft_tokens"] == 4
        assert engine._config.effective("speculative_num_draft_tokens") == 4


def test_relaunch_after_serving_is_a_new_launch() -> None:
    _parsed, resolved = _pair()
    line = f"[2026-11-30 14:22:12] server_args={resolved!r}"
    pipe, _engine = _run([line, *_decode(2), line, *_decode(1)])
    assert pipe.snapshot.launch == 2
