"""The advisor's model against published sweeps and against independent computations in this file.

Published numbers are copied here (never read from ../shared at run time); each table names its source.
"""

from __future__ import annotations

import itertools
import json

import pytest

from spectui.core.specdec import (
    CostModel,
    Observation,
    Observed,
    advise,
    ceiling,
    depth_advice,
    expected_accept_len,
    fit,
)
from spectui.errors import InputError

# SpecForge docs/spec_bundle/public/raw_data/data.json, as averaged over 7 benchmarks in
# docs/SPECDEC.md §2.3 (SpecBundle, SGLang): mean accept length at chains 3/1/4, 5/1/6, 7/1/8.
SPECBUNDLE_CHAINS = {
    "Llama-3.1-8B SpecForge": (2.92, 3.61, 4.01),
    "Llama-3.1-8B lmsys": (2.53, 2.95, 3.16),
    "Llama-3.3-70B SpecForge": (2.69, 3.00, 3.16),
    "Llama-3.3-70B lmsys": (2.24, 2.50, 2.60),
    "Llama-4-Scout SpecForge": (2.82, 3.42, 3.80),
    "Qwen3-30B-A3B SpecForge": (2.82, 3.43, 3.81),
    "Qwen3-235B SpecForge": (2.77, 3.25, 3.47),
    "Qwen3-235B lmsys": (2.15, 2.30, 2.34),
    "Qwen3-Next-80B SpecForge": (2.94, 3.62, 4.04),
    "Qwen3-Coder-30B SpecForge": (3.27, 4.22, 4.89),
    "Qwen3-Coder-480B SpecForge": (3.29, 4.27, 4.94),
    "Kimi-K2 AQ-MedAI": (3.08, 3.84, 4.29),
    "Ling-flash-2.0 AQ-MedAI": (2.84, 3.44, 3.79),
}
SPECBUNDLE_STEPS = (3, 5, 7)

# vLLM issue #20780 (docs/SPECDEC.md §2.5): Llama-3.1-8B, H100, BS1, MT-bench, chain, accept length by K = 2..7.
VLLM_20780 = {
    "EAGLE-1": dict(zip(range(2, 8), (2.10, 2.29, 2.39, 2.43, 2.45, 2.47), strict=True)),
    "EAGLE-3": dict(zip(range(2, 8), (2.36, 2.79, 3.08, 3.32, 3.46, 3.54), strict=True)),
}

# docs/SPECDEC.md §1.2 table (i.i.d. chain, E[L] = (1 - a^(k+1)) / (1 - a)), row alpha = 0.80, k = 1..8.
IID_080 = (1.80, 2.44, 2.95, 3.36, 3.69, 3.95, 4.16, 4.33)


# ---- independent reference implementation (does not call the code under test) ----

def ref_accept_len(a1: float, r: float, k: int) -> float:
    total, prod = 1.0, 1.0
    for i in range(1, k + 1):
        prod *= min(1.0, max(0.0, a1 * r ** (i - 1)))
        total += prod
    return total


def ref_a1(k: int, target: float, r: float) -> float:
    lo, hi = 0.0, 1.0
    if ref_accept_len(hi, r, k) <= target:
        return hi
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ref_accept_len(mid, r, k) < target else (lo, mid)
    return (lo + hi) / 2


# ---- the accept-length model ----

def test_iid_case_matches_published_table():
    for k, want in enumerate(IID_080, start=1):
        assert expected_accept_len(0.8, 1.0, k) == pytest.approx(want, abs=0.005)
    assert expected_accept_len(0.8, 1.0, 0) == 1.0
    assert expected_accept_len(1.0, 1.0, 5) == 6.0  # every draft accepted: k + 1


def test_alpha_is_clipped_to_one():
    # a1 r^(i-1) > 1 for r > 1: clipped, so the chain never commits more than k + 1
    assert expected_accept_len(0.99, 1.05, 6) == pytest.approx(ref_accept_len(0.99, 1.05, 6))
    assert expected_accept_len(0.99, 1.05, 6) <= 7.0


@pytest.mark.parametrize("name", sorted(SPECBUNDLE_CHAINS))
def test_fit_reproduces_specbundle_row(name):
    lens = SPECBUNDLE_CHAINS[name]
    f = fit(Observation(k, v) for k, v in zip(SPECBUNDLE_STEPS, lens, strict=True))
    assert not f.prior
    for k, v in zip(SPECBUNDLE_STEPS, lens, strict=True):
        assert abs(f.accept_len(k) - v) <= 0.05, (name, k)


@pytest.mark.parametrize("name", sorted(SPECBUNDLE_CHAINS))
def test_two_depths_predict_the_third_specbundle(name):
    lens = dict(zip(SPECBUNDLE_STEPS, SPECBUNDLE_CHAINS[name], strict=True))
    f = fit([Observation(3, lens[3]), Observation(7, lens[7])])
    assert f.accept_len(5) == pytest.approx(lens[5], rel=0.05)


@pytest.mark.parametrize("draft", sorted(VLLM_20780))
def test_two_depths_predict_the_vllm_sweep(draft):
    sweep = VLLM_20780[draft]
    for a, b in itertools.combinations(sorted(sweep), 2):
        f = fit([Observation(a, sweep[a]), Observation(b, sweep[b])])
        for k, v in sweep.items():
            assert f.accept_len(k) == pytest.approx(v, rel=0.05), (draft, (a, b), k)


# ---- intervals ----

ONE_DEPTH_CASES = [(3, 2.92), (1, 1.81), (5, 3.61), (7, 2.34), (2, 2.95), (4, 1.3)]


@pytest.mark.parametrize(("k0", "l0"), ONE_DEPTH_CASES)
def test_one_depth_uses_prior_and_interval_covers_prior_r_range(k0, l0):
    adv = advise([(k0, l0)], max_steps=12)
    assert adv.model.prior is True
    assert adv.model.r == pytest.approx(0.95)
    assert adv.row(k0).accept_len == pytest.approx(l0, abs=1e-6) or l0 > ref_accept_len(1.0, 0.95, k0)
    # independent: every r in the range public sweeps fit (0.88..1.0), a1 solved to reproduce l0
    rs = [0.88 + 0.01 * i for i in range(13)]
    for row in adv.predicted:
        implied = [ref_accept_len(ref_a1(k0, l0, r), r, row.steps) for r in rs]
        assert row.low <= min(implied) + 1e-6, row
        assert row.high >= max(implied) - 1e-6, row
        assert row.low <= row.accept_len <= row.high


def test_two_depth_interval_is_data_driven_not_absurdly_narrow():
    adv = advise([(1, 1.81), (3, 2.80)])
    assert adv.model.prior is False
    for row in adv.predicted:
        assert row.high - row.low >= 0.02 * row.accept_len, row  # at least +-1 %
    widths = [row.high - row.low for row in adv.predicted]
    assert widths[9] > widths[2]  # extrapolating to 10 is less certain than the observed depth 3


def test_three_consistent_depths_narrow_the_far_prediction():
    lens = SPECBUNDLE_CHAINS["Llama-3.1-8B SpecForge"]
    three = advise(list(zip(SPECBUNDLE_STEPS, lens, strict=True)))
    one = advise([(3, lens[0])])
    assert (three.row(10).high - three.row(10).low) < (one.row(10).high - one.row(10).low)


def test_noisy_depths_widen_the_interval():
    smooth = advise([(2, 2.36), (4, 3.08), (6, 3.46)])  # vLLM #20780 EAGLE-3, as published
    noisy = advise([(2, 2.36), (4, 3.30), (6, 3.30)])  # same depths, a kink no (a1, r) fits
    w = lambda a, k: a.row(k).high - a.row(k).low  # noqa: E731
    assert w(noisy, 8) > w(smooth, 8)


# ---- cost model ----

def synthetic(batch, k0=3, a1=0.8, r=0.95, t_target=10.0, t_draft=1.0, t_vtok=0.3):
    """Ground truth by the serving model: t_round = t_target + k t_draft + (k+1) B t_vtok (ms)."""
    def t_round(k):
        return t_target + k * t_draft + (k + 1) * batch * t_vtok

    def speed(k):
        return ref_accept_len(a1, r, k) / t_round(k) if k else 1.0 / (t_target + batch * t_vtok)

    observed = Observed(k0, ref_accept_len(a1, r, k0), speed(k0))
    return observed, speed(0), speed


def test_speculation_loses_at_high_batch():
    obs, base, speed = synthetic(batch=256)
    assert all(speed(k) < base for k in range(1, 11))  # the premise, computed independently
    adv = advise([obs], baseline_per_request_tps=base, running=256)
    rec = adv.to_json()["recommend"]
    assert (rec["steps"], rec["topk"], rec["num_draft_tokens"]) == (0, 0, 0)
    assert "slower than no speculation" in rec["why"]
    verdict = depth_advice(obs.steps, obs.accept_len, obs.tokens_per_s, base, running=256)
    assert verdict.direction == "off" and verdict.steps == 0


def shallowest_fastest(speed, depths=range(1, 11), tie=0.02):
    """The shallowest depth within `tie` of the fastest (a flat optimum is no reason to go deeper, #23)."""
    top = max(speed(k) for k in depths)
    return min(k for k in depths if speed(k) >= top * (1 - tie))


def test_interior_best_depth_when_verify_cost_grows_with_depth():
    obs, base, speed = synthetic(batch=1)
    truth = shallowest_fastest(speed)
    assert 1 < truth < 10 and speed(truth) > base  # premise
    adv = advise([obs], baseline_per_request_tps=base, running=1)
    assert adv.recommend.steps == truth
    assert adv.recommend.num_draft_tokens == truth + 1 and adv.recommend.topk == 1
    for row in adv.predicted:  # r = 0.95 is also the prior, so the model is exact here
        assert row.tokens_per_s == pytest.approx(speed(row.steps), rel=1e-6)


def test_free_verify_makes_the_deepest_depth_best():
    # same accept lengths, but a round costs the same at every depth: nothing to stop deepening
    obs, base, speed = synthetic(batch=1, t_draft=0.0, t_vtok=0.0)
    adv = advise([obs], baseline_per_request_tps=base)
    assert max(range(1, 11), key=speed) == 10  # premise: every step still adds a little
    # ... but the last ones add under 2 % together: the shallowest depth within 2 % of the fastest
    assert adv.recommend.steps == shallowest_fastest(speed) and adv.recommend.steps >= 6


def test_moderate_batch_prefers_shallower_than_batch_one():
    small = advise([synthetic(batch=1)[0]], baseline_per_request_tps=synthetic(batch=1)[1], running=1)
    mid_obs, mid_base, mid_speed = synthetic(batch=32)
    mid = advise([mid_obs], baseline_per_request_tps=mid_base, running=32)
    assert mid.recommend.steps == shallowest_fastest(mid_speed)
    assert 0 < mid.recommend.steps < small.recommend.steps


def test_cost_from_two_measured_depths():
    a1, r, batch = 0.78, 0.93, 4
    speed = {k: ref_accept_len(a1, r, k) / (12.0 + 2.0 * k) for k in (2, 5)}
    obs = [Observed(k, ref_accept_len(a1, r, k), speed[k]) for k in (2, 5)]
    adv = advise(obs, running=batch)
    assert adv.cost.source == "measured"
    assert adv.cost.intercept == pytest.approx(12.0) and adv.cost.slope == pytest.approx(2.0)
    for row in adv.predicted:
        assert row.tokens_per_s == pytest.approx(ref_accept_len(a1, r, row.steps) / (12.0 + 2.0 * row.steps),
                                                 rel=0.01)


def test_from_components_is_the_serving_formula():
    cm = CostModel.from_components(t_target=10.0, t_draft=1.0, t_verify_tok=0.3, batch=8, t_overhead=0.5)
    assert cm.round_time(3) == pytest.approx(10.0 + 0.5 + 3 * 1.0 + 4 * 8 * 0.3)
    assert cm.round_time(0) == pytest.approx(10.0 + 8 * 0.3)


def test_speeds_are_none_without_cost():
    adv = advise([(3, 2.9)])
    assert all(row.tokens_per_s is None for row in adv.predicted)
    assert all("tokens_per_s" not in row for row in adv.to_json()["predicted"])


# ---- contract shape ----

def test_json_matches_contract():
    out = advise([(1, 1.81), (3, 2.80)], max_steps=10).to_json()
    json.dumps(out)
    assert set(out) == {"model", "predicted", "recommend", "next_to_measure", "baseline", "measurement_wins"}
    assert set(out["model"]) == {"a1", "r", "observations", "prior"}
    assert out["model"]["observations"] == [[1, 1.81], [3, 2.8]]
    assert out["model"]["prior"] is False
    assert [row["steps"] for row in out["predicted"]] == list(range(1, 11))
    for row in out["predicted"]:
        assert set(row) == {"steps", "accept_len", "low", "high", "speedup"}  # speedup: modelled (#23)
        assert set(row["speedup"]) == {"value", "low", "high"}
    assert set(out["recommend"]) == {"steps", "topk", "num_draft_tokens", "why"}
    rec = out["recommend"]
    assert rec["topk"] == 1 and rec["num_draft_tokens"] == rec["steps"] + 1 and rec["why"]
    assert set(out["next_to_measure"]) == {"steps"}
    assert out["next_to_measure"]["steps"] not in (1, 3)
    assert 1 <= out["next_to_measure"]["steps"] <= 10


def test_json_speeds_with_cost():
    obs, base, _ = synthetic(batch=1)
    out = advise([obs], baseline_per_request_tps=base).to_json()
    assert all(isinstance(row["tokens_per_s"], float) for row in out["predicted"])


def test_next_to_measure_none_when_all_observed():
    adv = advise([(1, 1.8), (2, 2.4), (3, 2.85)], max_steps=3)
    assert adv.next_to_measure is None
    assert adv.to_json()["next_to_measure"] == {"steps": None}


def test_deterministic():
    obs = [(2, 2.36), (4, 3.08), (6, 3.46)]
    assert advise(obs).to_json() == advise(obs).to_json()


# ---- helpers ----

def test_ceiling():
    assert ceiling(3) == 4
    assert ceiling(3, 1, 16) == 4  # topk 1: SGLang forces ndt = steps + 1
    assert ceiling(5, 3, 6) == 6
    assert ceiling(7, 4, 8) == 8
    assert ceiling(5, 4, 3) == 3  # the tree budget, not the depth, binds
    assert ceiling(0, 0, 0) == 1


def test_depth_advice_saturated_shallow_chain_goes_deeper():
    # L/(steps+1) = 0.975: capped by depth (docs/SPECDEC.md §4.2); cheap rounds at batch 1
    v = depth_advice(1, 1.95, per_request_tps=150.0, baseline_per_request_tps=100.0, running=1)
    assert v.direction == "deeper" and v.steps > 1 and v.gain > 1.0
    assert v.accept_len is not None and v.low <= v.accept_len <= v.high


def test_depth_advice_expensive_deep_chain_goes_shallower():
    # steps 7 barely beats the baseline: the deep steps do not pay
    v = depth_advice(7, 3.2, per_request_tps=105.0, baseline_per_request_tps=100.0, running=8)
    assert v.direction == "shallower" and 1 <= v.steps < 7 and v.gain > 1.0
    assert v.steps == advise([(7, 3.2, 105.0)], 100.0, 8).recommend.steps


def test_depth_advice_without_speed_still_ranks():
    v = depth_advice(3, 2.9)
    assert v.cost_source == "prior" and v.steps >= 1


@pytest.mark.parametrize("bad", [[], [(0, 1.5)], [(3, 0.5)], [(3, 4.5)], [(3, 2.5, 0.0)]])
def test_bad_input_is_an_input_error(bad):
    with pytest.raises(InputError):
        advise(bad)
