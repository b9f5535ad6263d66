"""Speculative fields per emulated release, SGLang's identities, and /server_info counters against the log."""

from __future__ import annotations

import json
import time

import pytest

from spectui.core.log import DecodeSample, LogParser
from tests.sim.conftest import CHAIN3, EAGLE3

FAST = ["--sim-time-scale", "50"]


def _finished(sim, body: dict | None = None) -> dict:
    with sim.client() as c:
        return c.post("/generate", json=body or {"text": "hi", "sampling_params": {"max_new_tokens": 200}}).json()


def _identities(meta: dict, accepted: str, proposed: str, histogram: str | None, ndt: int = 4) -> None:
    v = meta["spec_verify_ct"]
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / v)
    assert meta[proposed] == v * (ndt - 1)
    assert meta["spec_accept_rate"] == pytest.approx(meta[accepted] / meta[proposed])
    # SGLang: the prefill emits the first token, every verify round accepted drafts + 1.
    assert meta["completion_tokens"] == 1 + v + meta[accepted]
    if histogram:
        h = meta[histogram]
        assert sum(h) == v and sum(i * n for i, n in enumerate(h)) == meta[accepted]
        assert len(h) <= ndt  # at most steps accepted drafts per round


@pytest.mark.parametrize(("version", "accepted", "proposed", "histogram", "absent"), [
    ("0.5.6.post2", "spec_accept_token_num", "spec_draft_token_num", None,
     {"spec_accept_histogram", "spec_accepted_drafts", "spec_num_correct_drafts"}),
    ("0.5.10", "spec_accept_token_num", "spec_draft_token_num", "spec_accept_histogram",
     {"spec_accepted_drafts", "spec_num_correct_drafts", "spec_correct_drafts_histogram"}),
    ("0.5.11", "spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram",
     {"spec_accept_token_num", "spec_num_correct_drafts", "spec_correct_drafts_histogram"}),
    ("0.5.12", "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram",
     {"spec_accept_token_num"}),
    ("0.5.23", "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram",
     {"spec_accept_token_num", "spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"}),
])
def test_meta_info_names_per_release(sim_factory, version, accepted, proposed, histogram, absent) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--sim-sglang-version", version])
    sim.wait_ready()
    meta = _finished(sim)["meta_info"]
    assert not absent & set(meta), sorted(meta)
    _identities(meta, accepted, proposed, histogram)
    if version == "0.5.12":  # 0.5.12 - 0.5.20 also keep the 0.5.11 names as backward-compat aliases
        assert meta["spec_accepted_drafts"] == meta[accepted] and meta["spec_accept_histogram"] == meta[histogram]
    assert sim.stop() == 0


def test_spec_fields_only_on_the_finished_chunk_and_in_sglext_on_request(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST])  # 0.5.23
    sim.wait_ready()
    with sim.client() as c:
        with c.stream("POST", "/generate", json={"text": "hi", "stream": True,
                                                 "sampling_params": {"max_new_tokens": 120}}) as r:
            events = [json.loads(line[6:]) for line in r.iter_lines()
                      if line.startswith("data: ") and line != "data: [DONE]"]
        plain = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}],
                                                     "max_tokens": 50}).json()
        asked = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}],
                                                     "max_tokens": 50, "return_spec_tokens_details": True}).json()
        with c.stream("POST", "/v1/completions", json={"prompt": "x", "max_tokens": 60, "stream": True,
                                                       "return_spec_tokens_details": True}) as r:
            chunks = [json.loads(line[6:]) for line in r.iter_lines()
                      if line.startswith("data: ") and line != "data: [DONE]"]
    assert "spec_verify_ct" in events[-1]["meta_info"]
    assert all("spec_verify_ct" not in e["meta_info"] for e in events[:-1] if e["meta_info"]["completion_tokens"] < 120)
    assert "sglext" not in plain and "spec_verify_ct" not in json.dumps(plain["usage"])
    details = asked["sglext"]["spec_tokens_details"]
    assert details["spec_accept_length"] == pytest.approx(asked["usage"]["completion_tokens"] / details["spec_verify_ct"])
    assert sum(details["spec_correct_drafts_histogram"]) == details["spec_verify_ct"]
    assert details["spec_cap_length"] == 0.0 and details["spec_cap_lens_histogram"] == []  # zero-filled
    ext = [ch for ch in chunks if "sglext" in ch]
    assert len(ext) == 1 and ext[0]["choices"] == []
    assert sim.stop() == 0


def test_sglext_is_absent_before_0520(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--sim-sglang-version", "0.5.12"])
    sim.wait_ready()
    with sim.client() as c:
        out = c.post("/v1/completions", json={"prompt": "x", "max_tokens": 30, "return_spec_tokens_details": True})
    assert "sglext" not in out.json()
    assert sim.stop() == 0


def test_server_info_counters_over_a_window_agree_with_the_decode_lines(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, "--decode-log-interval", "20", "--sim-traffic", "30",
                       "--sim-concurrency", "6", "--sim-output-len", "400", "--sim-time-scale", "20",
                       "--sim-spec-counters", "1"])
    sim.wait_ready()

    def counters() -> tuple[int, int, int]:
        with sim.client() as c:
            st = c.get("/server_info").json()["internal_states"][0]
        assert st["spec_counter_dp_rank"] == 0
        return st["spec_cumulative_num_accept_tokens"], st["spec_cumulative_num_forward_ct"], sim.text().count("Decode batch")

    def wait_lines(n: int) -> None:
        deadline = time.monotonic() + 90
        while sim.text().count("Decode batch") < n:
            assert time.monotonic() < deadline, sim.text()[-2000:]
            time.sleep(0.02)

    wait_lines(3)
    tok0, fwd0, line0 = counters()
    wait_lines(line0 + 12)
    tok1, fwd1, line1 = counters()
    assert sim.stop() == 0
    decodes = [r for r in LogParser().feed(sim.lines()) if isinstance(r, DecodeSample)]
    window = decodes[line0:line1]
    # Lines weight by their rounds x running requests; the counters' ratio is the same pooled mean.
    logged = sum(d.accept_len * d.running_req for d in window) / sum(d.running_req for d in window)
    assert (tok1 - tok0) / (fwd1 - fwd0) == pytest.approx(logged, rel=0.03)
    assert 20 * sum(d.running_req for d in window) == pytest.approx(fwd1 - fwd0, rel=0.25)


def test_counters_are_off_by_default(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST])
    sim.wait_ready()
    with sim.client() as c:
        st = c.get("/server_info").json()["internal_states"][0]
    assert not {k for k in st if k.startswith("spec_cumulative") or k == "spec_counter_dp_rank"}
    assert sim.stop() == 0
