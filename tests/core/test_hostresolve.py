"""Judging a source build by the host's own SGLang (core.launch.hostresolve): the answer of
data/resolve_host.py, as the real 0.5.16 snapshot gives it, replaces the replayed release rules."""

import pytest

from spectui.core.launch import (
    HostResolveError,
    is_source_build,
    judge_by_host,
    parse_host_resolution,
    resolve,
)

NGRAM = ["--model-path", "/m", "--device", "cpu", "--speculative-algorithm", "NGRAM",
         "--speculative-num-draft-tokens", "2", "--speculative-eagle-topk", "4"]


def test_what_is_a_source_build() -> None:
    assert is_source_build("0.5.16.dev0+g2f14d6c6") and is_source_build("0.5.23+local") and is_source_build("0.5.9rc1")
    assert not is_source_build("0.5.16") and not is_source_build("0.5.6.post2") and not is_source_build(None)


def test_released_rules_refuse_what_the_cpu_build_runs_and_the_host_decides() -> None:
    base = resolve(NGRAM, "0.5.16")
    assert base.outcome == "error" and "only supports CUDA" in base.error.message  # 0.5.16's own rule
    # What the real 0.5.16 snapshot answered for this command (topk silently 10, the draft tokens as asked).
    dump = {"outcome": "ok", "sglang_version": "0.5.16.dev0+g2f14d6c6", "warnings": ["Max running requests is reset to 48"],
            "effective": {"speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 2,
                          "speculative_eagle_topk": 10, "device": "cpu"}}
    res = judge_by_host(base, dump, device="cpu")
    assert res.outcome == "ok" and res.verdict == "overridden"  # topk asked 4, runs 10: never "ok"
    assert [o.field for o in res.overrides] == ["speculative_eagle_topk"]
    assert res.catalogue is not None and res.catalogue.source == "host-resolution"
    assert "host's own SGLang 0.5.16.dev0+g2f14d6c6" in res.catalogue.why


def test_an_error_and_an_argparse_refusal_from_the_host() -> None:
    base = resolve(NGRAM, "0.5.16")
    err = judge_by_host(base, {"outcome": "error", "error_type": "ValueError", "raised_at": "_handle_eagle_family",
                               "error_message": "--speculative-use-rejection-sampling requires --speculative-eagle-topk=1."},
                        device="cpu")
    assert err.verdict == "error" and err.error.type == "ValueError" and err.error.raised_at == "_handle_eagle_family"
    bad = judge_by_host(base, {"outcome": "argparse_error", "error_message": "sglang serve: error: argument x"})
    assert bad.verdict == "argparse_error" and "argument x" in bad.argparse_error


def test_a_gpu_only_check_on_a_host_without_the_gpu_is_no_verdict() -> None:
    base = resolve(["--model-path", "/m"], "0.5.16")
    with pytest.raises(HostResolveError, match="needs the server's GPU"):
        judge_by_host(base, {"outcome": "error", "error_type": "RuntimeError",
                             "error_message": "Found no NVIDIA driver on your system."}, device="cuda")


def test_the_answer_is_read_from_the_marker_line_only() -> None:
    out = "WARNING noise\nSPECTUI-RESOLVE {\"outcome\": \"ok\", \"effective\": {}}\n"
    assert parse_host_resolution(out)["outcome"] == "ok"
    for bad in ("no marker", "SPECTUI-RESOLVE {broken", 'SPECTUI-RESOLVE {"outcome": "maybe"}'):
        with pytest.raises(HostResolveError):
            parse_host_resolution(bad)
