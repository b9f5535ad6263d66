"""Accept-length math against the tables in docs/SPECDEC.md (values computed there from the formulas)."""

from __future__ import annotations

import pytest

from spectui.core.specdec import theory as specmath


@pytest.mark.parametrize(
    ("alpha", "k", "expected"),
    # docs/SPECDEC.md §1.2 table (rows alpha, columns k).
    [(0.5, 1, 1.50), (0.6, 3, 2.18), (0.7, 5, 2.94), (0.8, 4, 3.36), (0.85, 8, 5.12), (0.9, 7, 5.70)],
)
def test_expected_accept_len_matches_specdec_table(alpha: float, k: int, expected: float) -> None:
    assert specmath.expected_accept_len(alpha, k) == pytest.approx(expected, abs=0.005)


def test_expected_accept_len_edges() -> None:
    assert specmath.expected_accept_len(1.0, 5) == 6.0
    assert specmath.expected_accept_len(0.0, 5) == 1.0


@pytest.mark.parametrize(
    ("accept_len", "k", "alpha"),
    # docs/SPECDEC.md §1.7 worked examples: SpecBundle Llama-3.1-8B L = 2.90/3.52/3.86 at k = 3/5/7 -> 0.79/0.78/0.77;
    # DeepSeek-V3.2 MTP L = 2.65 at k=3 -> 0.73.
    [(2.90, 3, 0.79), (3.52, 5, 0.78), (3.86, 7, 0.77), (2.65, 3, 0.73)],
)
def test_alpha_from_accept_len_matches_specdec_examples(accept_len: float, k: int, alpha: float) -> None:
    assert specmath.alpha_from_accept_len(accept_len, k) == pytest.approx(alpha, abs=0.006)


def test_alpha_closed_forms() -> None:
    assert specmath.alpha_from_accept_len(1.6, 1) == pytest.approx(0.6)  # k=1: alpha = L - 1
    L = 2.2
    assert specmath.alpha_from_accept_len(L, 2) == pytest.approx(((4 * L - 3) ** 0.5 - 1) / 2)


def test_alpha_saturation_and_floor() -> None:
    assert specmath.alpha_from_accept_len(2.0, 1) == 1.0
    assert specmath.alpha_from_accept_len(1.0, 3) == 0.0


@pytest.mark.parametrize(
    ("alpha", "cost", "steps", "speedup"),
    # docs/SPECDEC.md §1.5 table of optimal k and speedup under the Leviathan model.
    [(0.5, 0.10, 2, 1.46), (0.7, 0.05, 6, 2.35), (0.8, 0.10, 6, 2.47), (0.9, 0.20, 7, 2.37), (0.6, 0.30, 1, 1.23)],
)
def test_best_depth_matches_specdec_table(alpha: float, cost: float, steps: int, speedup: float) -> None:
    advice = specmath.best_depth(alpha, cost)
    assert advice.steps == steps
    assert advice.speedup == pytest.approx(speedup, abs=0.01)


def test_seed_numbers_no_depth_pays() -> None:
    # Seed 000: accept len 1.6 at steps 1, 56.8 tok/s against a 90 tok/s baseline.
    alpha = specmath.alpha_from_accept_len(1.6, 1)
    cost = specmath.implied_draft_cost(1.6, 1, 56.8 / 90)
    assert cost == pytest.approx(1.6 / (56.8 / 90) - 1)
    assert specmath.best_depth(alpha, cost).speedup < 1.0


def test_ceiling_and_saturation() -> None:
    assert specmath.accept_len_ceiling(15) == 16
    assert specmath.saturation(3.7, 3) == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("version", "rate"),
    # docs/REFERENCE.md §3.2: the three formulas for L = 2.17 at steps 3 / draft tokens 4 (sglang #11948 shows 0.54).
    [("0.5.4", 2.17 / 4), ("0.5.6.post2", 2.17 / 4), ("0.5.23", 1.17 / 3)],
)
def test_printed_accept_rate_by_version(version: str, rate: float) -> None:
    assert specmath.printed_accept_rate(2.17, 3, 4, version) == pytest.approx(rate)


def test_draft_acceptance_rate() -> None:
    assert specmath.draft_acceptance_rate(2.17, 4) == pytest.approx(0.39)
    assert specmath.draft_acceptance_rate(1.5, 1) is None
