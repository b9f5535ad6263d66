"""The rules' fast path to the advisor: same answer without intervals, remembered for repeated windows."""

from __future__ import annotations

import pytest

from spectui.core.specdec import advise, advise_one, depth_advice


@pytest.mark.parametrize(("steps", "accept", "tps", "base", "running"), [
    (1, 1.81, 60.0, 90.0, 1), (3, 2.8, 120.0, 90.0, 1), (5, 3.1, 8.0, 20.0, 48), (3, 2.2, None, None, 4),
])
def test_no_intervals_changes_nothing_but_the_intervals(steps, accept, tps, base, running) -> None:
    full = advise([(steps, accept, tps)] if tps else [(steps, accept)], base, running, 10)
    fast = advise([(steps, accept, tps)] if tps else [(steps, accept)], base, running, 10, intervals=False)
    r1, r2 = fast.recommend, full.recommend
    assert (r1.steps, r1.topk, r1.num_draft_tokens) == (r2.steps, r2.topk, r2.num_draft_tokens)
    assert fast.speedup == full.speedup  # only the 'why' text differs: it quotes the interval
    assert [p.accept_len for p in fast.predicted] == [p.accept_len for p in full.predicted]
    assert [p.tokens_per_s for p in fast.predicted] == [p.tokens_per_s for p in full.predicted]
    assert all(p.low == p.high == p.accept_len for p in fast.predicted)
    assert any(p.low < p.high for p in full.predicted)  # the full answer does carry intervals


def test_advise_one_remembers_and_rounds_only_within_print_precision() -> None:
    a = advise_one(3, 2.804, 41.23, 30.0, 4, 10, intervals=False)
    b = advise_one(3, 2.8041, 41.231, 30.0, 4, 10, intervals=False)
    assert a is b  # the same window asked twice: one fit
    assert a.model.observations == ((3, 2.8),)
    c = advise_one(3, 2.9, 41.23, 30.0, 4, 10, intervals=False)
    assert c is not a and c.predicted[2].accept_len == pytest.approx(2.9, abs=0.01)


def test_depth_advice_direction_is_the_same_with_or_without_intervals() -> None:
    for steps, accept, running in ((1, 1.9, 1), (7, 3.0, 1), (5, 3.1, 48)):
        with_iv = depth_advice(steps, accept, running=running)
        without = depth_advice(steps, accept, running=running, intervals=False)
        assert (with_iv.steps, with_iv.direction) == (without.steps, without.direction)
