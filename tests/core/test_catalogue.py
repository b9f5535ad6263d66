"""Flag catalogues: versions, argparse-exact parsing and messages, did-you-mean, --help import.

Expected argparse messages are the ones real SGLang printed (tests/data/resolution/*.jsonl, and
docs/REFERENCE.md §1.4 for runs not in those files); they are not produced by the code under test.
"""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from spectui.core.launch import (
    ArgparseFailure,
    catalogue_from_help,
    known_versions,
    load_catalogue,
    pick_catalogue,
    pick_version,
)


def _fail(version: str, args: list[str], prog: str = "launch_server") -> str:
    with pytest.raises(ArgparseFailure) as exc:
        load_catalogue(version).parse_args(["--model-path", "m", *args], prog)
    return exc.value.message


SHARED_RELEASES = 62  # every SGLang release on PyPI from 0.4.6 to 0.5.23 (spectui/data/catalogues/README.md)


def test_known_versions_every_release_oldest_first() -> None:
    known = known_versions()
    assert len(known) == SHARED_RELEASES
    assert known[0] == "0.4.6" and known[-1] == "0.5.23"
    for must in ("0.4.10.post2", "0.5.1.post3", "0.5.10.post1", "0.5.12", "0.5.15", "0.5.19", "0.5.20"):
        assert must in known


@pytest.mark.parametrize("version", known_versions())
def test_every_shipped_catalogue_loads_and_rebuilds_its_parser(version: str) -> None:
    cat = load_catalogue(version)
    assert cat.version == version and len(cat.specs) > 100
    parsed = cat.parse_args(["--model-path", "m"], "launch_server")
    assert parsed.given == {"model_path": "m"}
    assert "usage: launch_server" in cat.format_usage("launch_server")


@pytest.mark.parametrize("asked, picked, exact", [
    (None, "0.5.23", True), ("0.5.6.post2", "0.5.6.post2", True), ("0.5.6", "0.5.6", True),
    ("0.5.20", "0.5.20", True), ("v0.5.10", "0.5.10", True), ("0.5.10.post1", "0.5.10.post1", True),
    ("0.5.10.post3", "0.5.10.post1", False), ("0.5.19.dev410+gedff717ef", "0.5.19", False),
    ("0.5.30", "0.5.23", False), ("0.6.0", "0.5.23", False),
])
def test_pick_version_exact_else_same_line_else_nearest_older(asked: str | None, picked: str, exact: bool) -> None:
    version, warning = pick_version(asked)
    assert version == picked and (warning is None) == exact
    pick = pick_catalogue(asked)
    assert (pick.version, pick.exact) == (picked, exact) and pick.why
    assert pick.to_json() == {"version": picked, "exact": exact, "why": pick.why, "source": "bundled"}
    if warning:
        assert picked in warning and "not bundled" in warning


# Ambiguity boundaries, read off the catalogues: --cuda-graph-max-bs is a unique flag up to 0.5.19 and an
# ambiguous prefix of --cuda-graph-max-bs-decode / -prefill from 0.5.20; --speculative-draft is ambiguous
# from 0.5.2 (--speculative-draft-model-path / --speculative-draft-model-revision).
@pytest.mark.parametrize("flag, value, first_ambiguous", [
    ("--cuda-graph-max-bs", "16", "0.5.20"), ("--speculative-draft", "d", "0.5.2"),
])
def test_flag_judged_from_the_release_it_became_ambiguous(flag: str, value: str, first_ambiguous: str) -> None:
    from spectui.core.versions import parse_version

    for version in known_versions():
        ambiguous = parse_version(version) >= parse_version(first_ambiguous)
        try:
            load_catalogue(version).parse_args(["--model-path", "m", flag, value], "launch_server")
            got = False
        except ArgparseFailure as exc:
            assert exc.message.startswith(f"ambiguous option: {flag} could match "), version
            got = True
        assert got == ambiguous, version


def test_0520_cuda_graph_max_bs_is_an_error_not_judged_with_0510() -> None:
    from spectui.core.launch import resolve

    res = resolve(["--model-path", "m", "--cuda-graph-max-bs", "16"], "0.5.20")
    assert res.outcome == "argparse_error" and res.catalogue_version == "0.5.20"
    assert res.argparse_error == ("ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
                                  "--cuda-graph-max-bs-prefill")
    assert resolve(["--model-path", "m", "--cuda-graph-max-bs", "16"], "0.5.19").outcome == "ok"


@pytest.mark.parametrize("bad", ["banana", "0.3.0", "5", "latest-ish"])
def test_unknown_version_lists_known_ones(bad: str) -> None:
    with pytest.raises(ValueError) as exc:
        pick_version(bad)
    assert "0.5.23" in str(exc.value) and "0.5.2" in str(exc.value)


def test_unique_prefix_equals_forms_store_true() -> None:
    cat = load_catalogue("0.5.6.post2")
    p = cat.parse_args(["--model-path", "m", "--speculative-num-step", "3", "--speculative-algo=EAGLE3",
                        "--mem-fraction", "0.7", "--tp", "2", "--enable-metrics"], "launch_server.py")
    assert p.given == {"model_path": "m", "speculative_num_steps": 3, "speculative_algorithm": "EAGLE3",
                       "mem_fraction_static": 0.7, "tensor_parallel_size": 2, "enable_metrics": True}
    assert p.typed["speculative_num_steps"] == "--speculative-num-step"
    assert p.values["speculative_eagle_topk"] is None  # default
    assert cat.canonical("--speculative-num-step") == "--speculative-num-steps"
    assert cat.canonical("--speculative-num") is None


def test_messages_real_sglang_printed() -> None:
    # tests/data/resolution/sglang-0.5.23.jsonl (launch_server: error: ...)
    assert _fail("0.5.23", ["--cuda-graph-max-bs", "16"]) == (
        "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")
    assert _fail("0.5.6.post2", ["--num-speculative-tokens", "16"]) == (
        "unrecognized arguments: --num-speculative-tokens 16")
    # tests/data/resolution/sglang-0.5.2.jsonl (argparse's ArgumentError text)
    assert _fail("0.5.2", ["--speculative-algorithm", "NGRAM"]) == (
        "argument --speculative-algorithm: invalid choice: 'NGRAM' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', "
        "'STANDALONE')")
    # docs/REFERENCE.md §1.4 (run on 0.5.6 / 0.5.23)
    assert _fail("0.5.6.post2", ["--speculative-algorithm", "eagle3"]) == (
        "argument --speculative-algorithm: invalid choice: 'eagle3' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', "
        "'STANDALONE', 'NGRAM')")
    assert _fail("0.5.23", ["--speculative-num-steps", "3.5"]) == (
        "argument --speculative-num-steps: invalid int value: '3.5'")
    assert _fail("0.5.23", ["--speculative-num", "3"]) == (
        "ambiguous option: --speculative-num could match --speculative-num-steps, --speculative-num-draft-tokens")
    assert _fail("0.5.23", ["--speculative-draft", "x"]).startswith(
        "ambiguous option: --speculative-draft could match --speculative-draft-model-path, "
        "--speculative-draft-model, --speculative-draft-model-revision,")
    assert _fail("0.5.6.post2", ["--speculative_num_steps", "3"]) == (
        "unrecognized arguments: --speculative_num_steps 3")


def test_unrecognized_order_is_argparse_order() -> None:
    assert _fail("0.5.10", ["--foo", "1", "--tp", "2", "--bar", "--speculative-ngram-branch-length", "3"]) == (
        "unrecognized arguments: --foo 1 --bar --speculative-ngram-branch-length 3")


def test_lower_case_algorithm_accepted_from_0512() -> None:
    p = load_catalogue("0.5.23").parse_args(["--model-path", "m", "--speculative-algorithm", "eagle3"])
    assert p.given["speculative_algorithm"] == "eagle3"  # upper-cased later, during resolution


def test_required_model_path_and_usage_block() -> None:
    cat = load_catalogue("0.5.23")
    with pytest.raises(ArgparseFailure) as exc:
        cat.parse_args(["--tp", "2"], "sglang serve")
    assert exc.value.message == "the following arguments are required: --model-path/--model"
    usage = cat.format_usage("sglang serve")
    assert usage.startswith("usage: sglang serve [-h] --model-path MODEL_PATH\n")
    assert usage == exc.value.usage


def test_usage_matches_a_plain_argparse_parser_built_independently() -> None:
    # Same actions registered directly on argparse: the usage block and messages must be identical.
    parser = argparse.ArgumentParser(prog="launch_server.py", formatter_class=lambda prog: argparse.HelpFormatter(
        prog, width=78))
    parser.add_argument("--model-path", "--model", required=True)
    parser.add_argument("--speculative-num-steps", type=int)
    parser.add_argument("--speculative-num-draft-tokens", type=int)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        parser.parse_args(["--model-path", "m", "--speculative-num", "3"])
    expected = err.getvalue().strip().splitlines()[-1].split(": error: ", 1)[1]
    assert _fail("0.5.6.post2", ["--speculative-num", "3"]) == expected


def test_help_flag_does_not_exit() -> None:
    assert load_catalogue("0.5.6.post2").parse_args(["-h"]).help_requested


def test_deprecation_notice_at_parse_time() -> None:
    p = load_catalogue("0.5.23").parse_args(["--model-path", "m", "--disable-cuda-graph"])
    assert p.given["disable_cuda_graph"] is True
    assert p.parse_warnings and "'--disable-cuda-graph' is deprecated" in p.parse_warnings[0]


@pytest.mark.parametrize("typed, expected", [
    ("--num-speculative-tokens", "--speculative-num-steps"),
    ("--speculative-model", "--speculative-draft-model-path"),
    ("--speculative-config", "--speculative-algorithm"),
    ("--draft-model", "--speculative-draft-model-path"),
    ("--speculative-topk", "--speculative-eagle-topk"),
    ("--speculative_num_steps", "--speculative-num-steps"),
    ("--speculative_algorithm", "--speculative-algorithm"),
    ("--spec-algorithm", "--speculative-algorithm"),
])
def test_did_you_mean(typed: str, expected: str) -> None:
    assert load_catalogue("0.5.6.post2").suggest(typed)[0] == expected


def test_did_you_mean_lists_ambiguous_candidates() -> None:
    assert load_catalogue("0.5.23").suggest("--cuda-graph-max-bs")[:2] == [
        "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill"]


HELP = """usage: launch_server.py [-h] --model-path MODEL_PATH [--tp-size TP_SIZE]

options:
  -h, --help            show this help message and exit
  --model-path MODEL_PATH, --model MODEL_PATH
                        The path of the model weights.
  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE
                        The tensor parallelism size.
  --speculative-algorithm {EAGLE,EAGLE3,NEXTN,STANDALONE,NGRAM}
                        Speculative algorithm.
  --speculative-num-steps SPECULATIVE_NUM_STEPS
                        The number of steps sampled from draft model in Speculative Decoding.
  --speculative-num-draft-tokens SPECULATIVE_NUM_DRAFT_TOKENS
                        The number of tokens sampled from the draft model in Speculative Decoding.
  --enable-metrics      Enable log prometheus metrics.
"""


def test_catalogue_from_help_output() -> None:
    cat = catalogue_from_help(HELP, "0.5.7")
    p = cat.parse_args(["--model", "m", "--tensor-parallel-size", "2", "--speculative-num-step", "3",
                        "--enable-metrics"])
    assert p.given == {"model_path": "m", "tp_size": "2", "speculative_num_steps": "3", "enable_metrics": True}
    with pytest.raises(ArgparseFailure) as exc:
        cat.parse_args(["--model-path", "m", "--speculative-num", "3"])
    assert exc.value.message == ("ambiguous option: --speculative-num could match --speculative-num-steps, "
                                 "--speculative-num-draft-tokens")
    with pytest.raises(ArgparseFailure) as exc:
        cat.parse_args(["--model-path", "m", "--speculative-algorithm", "eagle"])
    assert "invalid choice: 'eagle'" in exc.value.message
    with pytest.raises(ValueError):
        catalogue_from_help("no flags here", "0.5.7")
