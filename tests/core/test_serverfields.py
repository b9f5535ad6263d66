"""resolve() names values by SGLang's ServerArgs fields (tp_size), not by argparse dests (tensor_parallel_size)."""

from __future__ import annotations

import pytest

from spectui.core.launch import dest_name, field_name, known_versions, load_catalogue, resolve, to_fields
from spectui.core.versions import parse_version

SPEC = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


@pytest.mark.parametrize("version", known_versions())
def test_every_parallel_size_dest_of_a_bundled_release_is_renamed(version: str) -> None:
    # Keeps the rename table in step with the catalogues: a release that parses into another
    # `*_parallel_size` dest needs its from_cli_args rename recorded in serverfields.py.
    dests = [s.dest for s in load_catalogue(version).specs]
    fields = to_fields(dict.fromkeys(dests), parse_version(version))
    assert [f for f in fields if f.endswith("_parallel_size")] == []
    # --pipeline-parallel-size first appears in 0.4.6.post2
    pp = {"pp_size"} if parse_version(version) >= parse_version("0.4.6.post2") else set()
    assert {"tp_size", "dp_size", "ep_size", *pp} <= set(fields)


@pytest.mark.parametrize("version", known_versions())
@pytest.mark.parametrize("spelling", [["--tp-size", "2", "--dp-size", "2", "--pp-size", "1", "--ep-size", "2"],
                                      ["--tensor-parallel-size", "2", "--data-parallel-size", "2",
                                       "--pipeline-parallel-size", "1", "--expert-parallel-size", "2"]])
def test_requested_effective_and_server_args_use_field_names(version: str, spelling: list[str]) -> None:
    if parse_version(version) < parse_version("0.4.6.post2"):  # no --pipeline-parallel-size yet
        spelling = [w for i, w in enumerate(spelling) if "pipeline" not in w and "pp-size" not in w
                    and not (i and ("pipeline" in spelling[i - 1] or "pp-size" in spelling[i - 1]))]
    res = resolve(["--model-path", "m", *spelling, *SPEC], version, model_arch="LlamaForCausalLM")
    assert res.outcome == "ok", (res.argparse_error, res.error)
    want = {"tp_size": 2, "dp_size": 2, "pp_size": 1, "ep_size": 2}
    if "--pp-size" not in spelling and "--pipeline-parallel-size" not in spelling:
        del want["pp_size"]
    assert {k: res.requested[k] for k in want} == want
    assert res.effective is not None and res.server_args is not None
    assert {k: res.effective[k] for k in want} == want
    assert {k: res.server_args[k] for k in want} == want
    for view in (res.requested, res.effective, res.server_args):
        assert not [k for k in view if k.endswith("_parallel_size")]


def test_defaults_are_renamed_too() -> None:
    res = resolve(["--model-path", "m"], "0.5.6.post2")
    assert res.effective is not None and res.effective["tp_size"] == 1 and res.effective["dp_size"] == 1
    assert "tensor_parallel_size" not in res.effective


def test_context_and_moe_dp_renamed_from_0_5_10() -> None:
    res = resolve(["--model-path", "m", "--attention-context-parallel-size", "2", "--moe-dp-size", "4"], "0.5.10")
    assert res.requested == {"model_path": "m", "attn_cp_size": 2, "moe_dp_size": 4}
    # 0.5.23 registers the fields themselves: same names, no rename needed.
    res = resolve(["--model-path", "m", "--attention-context-parallel-size", "2", "--moe-dp-size", "4"], "0.5.23")
    assert res.requested == {"model_path": "m", "attn_cp_size": 2, "moe_dp_size": 4}


def test_rename_round_trip_and_unrelated_names_untouched() -> None:
    ver = parse_version("0.5.6.post2")
    assert field_name("tensor_parallel_size", ver) == "tp_size"
    assert dest_name("tp_size", ver) == "tensor_parallel_size"
    assert field_name("speculative_num_steps", ver) == "speculative_num_steps"
    assert field_name("attention_context_parallel_size", ver) == "attention_context_parallel_size"  # not in 0.5.6
    assert dest_name("mem_fraction_static", ver) == "mem_fraction_static"


def test_argparse_error_names_the_flag_not_the_field() -> None:
    # The argparse message is argparse's own: it names the option strings, untouched by the rename.
    res = resolve(["--model-path", "m", "--tp-size", "two"], "0.5.6.post2")
    assert res.outcome == "argparse_error"
    assert res.argparse_error == "argument --tensor-parallel-size/--tp-size: invalid int value: 'two'"
