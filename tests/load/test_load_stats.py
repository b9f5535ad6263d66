"""Statistics as bench_serving defines them, on hand-made records; spec field names of every release."""

from __future__ import annotations

import pytest

from spectui.load import RequestRecord, SpecFields, distribution, percentile, summarize


def rec(i: int, start: float, chunks: list[float], end: float, tokens: int, *, error: str | None = None,
        counts: list[int | None] | None = None) -> RequestRecord:
    r = RequestRecord(i, f"p{i}", "chat", False, start=start, start_wall=1000.0 + start)
    r.chunk_times = chunks
    r.chunk_tokens = counts if counts is not None else [None] * len(chunks)
    r.first_token = chunks[0] if chunks else None
    r.end, r.output_tokens, r.output_tokens_source, r.error = end, tokens, "usage", error
    return r


def test_percentile_is_numpys_linear_default() -> None:
    xs = [1.0, 2.0, 3.0, 4.0, 10.0]
    # numpy.percentile(xs, [50, 90, 99]) == [3.0, 7.6, 9.76]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 90) == pytest.approx(7.6)
    assert percentile(xs, 99) == pytest.approx(9.76)
    assert percentile([5.0], 99) == 5.0
    assert distribution([]) == {"mean": None, "p50": None, "p90": None, "p95": None, "p99": None, "std": None,
                                "max": None}


def test_request_figures_follow_bench_serving() -> None:
    r = rec(0, 10.0, [10.1, 10.2, 10.5], 10.6, tokens=11)
    assert r.ttft == pytest.approx(0.1)
    assert r.e2e == pytest.approx(0.6)
    assert r.tpot == pytest.approx(0.5 / 10)  # (e2e - ttft) / (output_tokens - 1)
    # 11 tokens, counts unknown: the first chunk 1, the other 10 spread 5 + 5 (estimated)
    assert r.token_counts() == ([1, 5, 5], "estimated")
    assert r.decode_tokens_per_s == pytest.approx(10 / 0.4)  # tokens after the first chunk / their time
    assert r.chunk_gaps == pytest.approx([0.1, 0.3])  # one gap per chunk
    assert r.itls == pytest.approx([0.02] * 5 + [0.06] * 5)  # bench_serving: a gap split over its tokens
    one = rec(1, 0.0, [0.2], 0.2, tokens=1)
    assert one.tpot is None and one.decode_tokens_per_s is None


def test_summary_counts_failures_and_uses_the_window() -> None:
    good = [rec(0, 0.0, [0.1, 0.2], 1.0, 10), rec(1, 0.5, [0.7, 0.9, 1.1], 2.0, 20)]
    bad = [rec(2, 0.6, [], 0.7, 0, error="HTTP 500"), rec(3, 0.8, [0.9], 1.5, 5, error="IncompleteStream"),
           rec(4, 0.9, [], 0.9, 0, error="HTTP 500")]
    s = summarize(good + bad, 0.0, 2.0)
    assert s["requests"] == {"ok": 2, "failed": 3, "errors": {"HTTP 500": 2, "IncompleteStream": 1}}
    assert s["output_tokens"] == 30  # failed requests count 0, as in bench_serving
    assert s["output_tokens_per_s"] == 15.0
    assert s["duration_s"] == 2.0
    assert s["ttft_ms"]["mean"] == pytest.approx(150.0)
    assert s["e2e_ms"]["p50"] == pytest.approx(1250.0)
    # per-token ITL: 9 + 19 tokens after the first chunks share 0.1 + 0.4 s of gaps
    assert s["itl_ms"]["mean"] == pytest.approx(1000 * 0.5 / 28, abs=1e-3)  # 3 decimals
    assert s["chunk_gap_ms"]["mean"] == pytest.approx(1000 * (0.1 + 0.2 + 0.2) / 3, abs=1e-3)
    tpots = [0.9 / 9, 1.3 / 19]
    assert s["tpot_ms"]["mean"] == pytest.approx(1000 * sum(tpots) / 2, abs=1e-3)
    assert s["per_request_tokens_per_s"]["mean"] == pytest.approx(28 / 0.5, abs=1e-3)  # Σ tokens / Σ time


def test_no_peak_for_speculative_runs() -> None:
    rs = [rec(0, 0.0, [0.1, 0.2, 1.5], 1.6, 9, counts=[3, 3, 3])]
    assert summarize(rs, 0.0, 2.0)["speculative"] is True  # chunks of 3 tokens: detected
    assert summarize(rs, 0.0, 2.0)["peak_output_tokens_per_s"] is None
    assert summarize(rs, 0.0, 2.0, speculative=False)["peak_output_tokens_per_s"] == 6.0
    plain = [rec(0, 0.0, [0.1, 0.2, 1.5], 1.6, 3)]
    assert summarize(plain, 0.0, 2.0)["peak_output_tokens_per_s"] is None  # unknown counts, spec not ruled out
    assert summarize(plain, 0.0, 2.0, speculative=False)["peak_output_tokens_per_s"] == 2.0


@pytest.mark.parametrize(("raw", "accepted", "proposed"), [
    ({"spec_verify_ct": 4, "spec_num_correct_drafts": 7, "spec_num_proposed_drafts": 12}, 7, 12),  # >=0.5.12
    ({"spec_verify_ct": 4, "spec_accepted_drafts": 7, "spec_proposed_drafts": 12}, 7, 12),  # 0.5.11
    ({"spec_verify_ct": 4, "spec_accept_token_num": 7, "spec_draft_token_num": 12}, 7, 12),  # 0.5.6-0.5.10
    ({"spec_verify_ct": 4, "spec_accept_length": 2.75, "spec_accept_rate": 0.58}, None, None),  # 0.5.4-0.5.5
    ({"spec_verify_ct": 4}, None, None),  # <=0.5.3
])
def test_spec_names_of_every_release(raw: dict, accepted: int | None, proposed: int | None) -> None:
    spec = SpecFields()
    spec.update({**raw, "completion_tokens": 11, "id": "x"}, "meta_info")
    assert spec.raw == raw  # only spec_* keys, as received
    assert spec.verify_ct == 4
    assert (spec.accepted_drafts, spec.proposed_drafts) == (accepted, proposed)
    assert spec.accept_length == raw.get("spec_accept_length")
    assert spec.accept_rate == raw.get("spec_accept_rate")
    assert spec.accept_length_from(11) == 11 / 4


def test_absent_spec_fields_are_none_never_zero() -> None:
    empty = SpecFields()
    assert not empty
    assert (empty.verify_ct, empty.accepted_drafts, empty.accept_length, empty.accept_rate) == (None,) * 4
    assert empty.accept_length_from(100) is None
    # SGLang's SpecTokensDetails zero-fills: an sglext block without verify rounds carries no evidence
    filler = SpecFields()
    filler.update({"spec_accept_rate": 0.0, "spec_accept_length": 0.0, "spec_num_correct_drafts": 0,
                   "spec_num_proposed_drafts": 0, "spec_verify_ct": 0, "spec_correct_drafts_histogram": []},
                  "sglext")
    assert filler and filler.raw["spec_verify_ct"] == 0
    assert (filler.verify_ct, filler.accepted_drafts, filler.accept_rate, filler.histogram) == (None,) * 4
