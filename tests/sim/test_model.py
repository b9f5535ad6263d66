"""The decode model against its equations (docs/SIMULATOR.md), computed here independently of the module."""

from __future__ import annotations

import random

import pytest

from spectui.sim.faults import LAYER_MISMATCH_ALPHA
from spectui.sim.model import DEFAULT_DECAY, DecodeModel, SpecConfig

BASELINE = 90.0


def chain(k: int) -> SpecConfig:
    return SpecConfig(num_steps=k, topk=1, draft_tokens=k + 1)  # SGLang forces ndt = steps + 1 at topk 1


def formula(a1: float, r: float, k: int) -> float:
    """E[L] = 1 + sum_{i<=k} prod_{j<=i} a1 r^(j-1) (docs/SPECDEC.md §1.2, per-position form)."""
    total, prod = 1.0, 1.0
    for i in range(1, k + 1):
        prod *= min(1.0, a1 * r ** (i - 1))
        total += prod
    return total


@pytest.mark.parametrize(("a1", "r", "k"), [(0.8, 0.97, 3), (0.7, 0.9, 5), (0.85, 1.0, 7), (0.6, 0.97, 1)])
def test_sampled_chain_matches_the_formula(a1: float, r: float, k: int) -> None:
    m = DecodeModel(BASELINE, a1, chain(k), decay=r)
    assert m.expected_accept_len() == pytest.approx(formula(a1, r, k), rel=1e-12)
    rng = random.Random(7)
    samples = [m.sample_accept_len(rng) for _ in range(40000)]
    mean = sum(samples) / len(samples)
    assert mean == pytest.approx(formula(a1, r, k), abs=0.03)
    assert min(samples) == 1 and max(samples) == k + 1  # bonus included, never above steps + 1


def test_decay_one_is_leviathan_and_decay_lowers_deep_positions() -> None:
    # r = 1: the i.i.d. closed form (1 - a^(k+1)) / (1 - a); docs/SPECDEC.md §1.2 table: a 0.8, k 3 -> 2.95
    assert DecodeModel(BASELINE, 0.8, chain(3), decay=1.0).expected_accept_len() == pytest.approx(2.9520)
    assert DecodeModel(BASELINE, 0.8, chain(1)).expected_accept_len() == pytest.approx(1.8)  # r has no effect
    deep = DecodeModel(BASELINE, 0.8, chain(7)).expected_accept_len()
    assert deep < DecodeModel(BASELINE, 0.8, chain(7), decay=1.0).expected_accept_len()
    assert 0.9 < DEFAULT_DECAY < 1.0


def test_seed_steps_1_is_short_and_slower_than_no_speculation() -> None:
    # The seed: topk 1, draft tokens 16, steps 1; SGLang forces draft tokens to 2 and it runs below 90 tok/s.
    m = DecodeModel(BASELINE, 0.8, SpecConfig(num_steps=1, topk=1, draft_tokens=2))
    assert m.expected_accept_len() == pytest.approx(1.8)
    assert m.expected_tps() < BASELINE
    # The seed's two measurements (56.8 tok/s at steps 1, 46.7 at steps 15, baseline 90): a round costs
    # about 2.54 and 3.66 plain steps; the model's defaults were fitted to them.
    assert m.round_units(1) == pytest.approx(2.54, abs=0.01)
    assert DecodeModel(BASELINE, 0.8, chain(15)).round_units(1) == pytest.approx(3.66, abs=0.01)


def test_interior_best_depth_at_low_concurrency() -> None:
    tps = {k: DecodeModel(BASELINE, 0.8, chain(k)).expected_tps(1) for k in range(1, 16)}
    best = max(tps, key=lambda k: tps[k])
    assert 1 < best < 15  # deeper pays until the decaying acceptance stops covering the draft cost
    assert tps[best] > BASELINE > tps[1]


def test_speculation_is_slower_than_no_speculation_at_high_concurrency() -> None:
    plain = DecodeModel(BASELINE, 0.8, None)
    spec = DecodeModel(BASELINE, 0.8, chain(3))
    gain = [spec.expected_tps(b) / plain.expected_tps(b) for b in (1, 4, 16, 48, 128)]
    assert gain[0] > 1.0
    assert gain == sorted(gain, reverse=True)  # verify width B x draft tokens costs more as B grows
    assert gain[-2] < 1.0 and gain[-1] < 1.0
    # A dense target (no extra expert traffic) gains more, and its gain still falls with the batch.
    dense = DecodeModel(BASELINE, 0.8, chain(3), verify_cost=0.0)
    dense_gain = [dense.expected_tps(b) / plain.expected_tps(b) for b in (1, 4, 16, 48, 128)]
    assert dense_gain[0] > gain[0] and dense_gain == sorted(dense_gain, reverse=True)


def test_no_speculation_runs_at_the_baseline_with_a_batch_cost() -> None:
    plain = DecodeModel(BASELINE, 0.8, None)
    assert plain.expected_tps(1) == pytest.approx(BASELINE)
    assert plain.expected_tps(8) / 8 < BASELINE  # per request slower...
    assert plain.expected_tps(8) > plain.expected_tps(1)  # ...server faster
    assert plain.expected_accept_len() == 1.0 and plain.sample_accept_len(random.Random(0)) == 1


def test_tree_beats_the_chain_at_batch_1_and_the_bonus_shrinks_with_batch() -> None:
    # A dense target (cheap verify): the EAGLE-2-style tree adds width, its verify cost grows with B * ndt.
    tree = DecodeModel(BASELINE, 0.8, SpecConfig(5, 8, 32), verify_cost=0.0)
    same_depth = DecodeModel(BASELINE, 0.8, chain(5), verify_cost=0.0)
    assert tree.expected_accept_len() > same_depth.expected_accept_len()
    bonus = [tree.expected_tps(b) / same_depth.expected_tps(b) for b in (1, 2, 8, 32, 64)]
    assert bonus[0] > 1.0
    assert bonus == sorted(bonus, reverse=True)
    assert bonus[-1] < 1.0  # at large batch the tree is a loss (docs/SPECDEC.md §3: trees only at batch 1-2)


def test_tree_sampling_matches_its_expected_accept_len_and_never_goes_deeper() -> None:
    m = DecodeModel(BASELINE, 0.8, SpecConfig(5, 4, 16))
    rng = random.Random(3)
    samples = [m.sample_accept_len(rng) for _ in range(40000)]
    assert sum(samples) / len(samples) == pytest.approx(m.expected_accept_len(), abs=0.03)
    assert max(samples) <= 6  # steps + 1
    small = DecodeModel(BASELINE, 0.99, SpecConfig(5, 4, 3))  # node budget 2: depth at most 2
    assert max(small.sample_accept_len(rng) for _ in range(2000)) <= 3


def test_layer_mismatch_gives_accept_len_about_one() -> None:
    m = DecodeModel(BASELINE, LAYER_MISMATCH_ALPHA, chain(3))
    assert 1.0 <= m.expected_accept_len() <= 1.2
