"""server_args= lines: the Python repr parsed into a dict safely (literals only, never evaluated)."""

from __future__ import annotations

from spectui.core.log.serverargs import parse_server_args


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
