"""The decode model reproduces the seed incident and SPECDEC's chain formula (unit tests of one layer)."""

from __future__ import annotations

import random

import pytest

from spectui.sim.faults import LAYER_MISMATCH_ALPHA
from spectui.sim.model import DecodeModel, SpecConfig

BASELINE = 90.0


def test_seed_steps_1_is_short_and_slower_than_no_speculation() -> None:
    # topk 1, draft tokens 16, steps 1: SGLang forces draft tokens to 2.
    m = DecodeModel(BASELINE, 0.8, SpecConfig(num_steps=1, topk=1, draft_tokens=2))
    assert 1.6 <= m.expected_accept_len() <= 1.8
    assert m.expected_tps() < BASELINE


def test_seed_steps_15_is_long_and_faster_than_no_speculation() -> None:
    m = DecodeModel(BASELINE, 0.8, SpecConfig(num_steps=15, topk=1, draft_tokens=16))
    assert 4.0 <= m.expected_accept_len() <= 5.0
    assert m.expected_tps() > BASELINE


def test_chain_matches_the_closed_form_table() -> None:
    # SPECDEC §1.2 table: alpha 0.8, k = 3 -> 2.95; alpha 0.7, k = 5 -> 2.94
    assert DecodeModel(BASELINE, 0.8, SpecConfig(3, 1, 4)).expected_accept_len() == pytest.approx(2.95, abs=0.005)
    assert DecodeModel(BASELINE, 0.7, SpecConfig(5, 1, 6)).expected_accept_len() == pytest.approx(2.94, abs=0.005)


def test_sampled_accept_len_converges_to_the_formula() -> None:
    m = DecodeModel(BASELINE, 0.8, SpecConfig(3, 1, 4))
    rng = random.Random(7)
    samples = [m.sample_accept_len(rng) for _ in range(20000)]
    assert sum(samples) / len(samples) == pytest.approx(2.952, abs=0.03)
    assert min(samples) == 1 and max(samples) == 4  # never deeper than steps + 1


def test_tree_is_a_bit_better_than_the_chain_but_never_deeper() -> None:
    chain = DecodeModel(BASELINE, 0.7, SpecConfig(5, 1, 6)).expected_accept_len()
    tree = DecodeModel(BASELINE, 0.7, SpecConfig(5, 4, 16)).expected_accept_len()
    assert chain < tree < chain * 1.3
    assert DecodeModel(BASELINE, 0.99, SpecConfig(5, 4, 16)).sample_accept_len(random.Random(1)) <= 6


def test_layer_mismatch_gives_accept_len_about_one() -> None:
    m = DecodeModel(BASELINE, LAYER_MISMATCH_ALPHA, SpecConfig(3, 1, 4))
    assert 1.0 <= m.expected_accept_len() <= 1.2


def test_no_speculation_runs_at_the_baseline_and_large_batches_shrink_the_gain() -> None:
    plain = DecodeModel(BASELINE, 0.8, None)
    assert plain.expected_tps(1) == pytest.approx(BASELINE)
    spec = DecodeModel(BASELINE, 0.8, SpecConfig(3, 1, 4))
    gain = [spec.expected_tps(b) / plain.expected_tps(b) for b in (1, 8, 48, 256)]
    assert gain[0] > 1.0
    assert gain == sorted(gain, reverse=True)  # the verify width (batch x draft tokens) costs real compute
    wide = DecodeModel(BASELINE, 0.8, SpecConfig(7, 8, 64))  # a 64-node tree verified for 256 requests
    assert wide.expected_tps(256) < plain.expected_tps(256)
