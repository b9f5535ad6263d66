"""The relaunch screen's prediction line (ui/widgets/prediction.py): the advisor read at the edited depth."""

from __future__ import annotations

from spectui.core.specdec import Observed, advise
from spectui.ui.widgets.prediction import prediction_text

CHAIN = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 1}


def test_steps_edit_shows_the_advisor_prediction() -> None:
    text = prediction_text({**CHAIN, "speculative_num_steps": 1}, {**CHAIN, "speculative_num_steps": 15}, 1.8)
    assert text is not None
    row = advise([Observed(1, 1.8)], max_steps=15).row(15)
    assert f"steps 1→15: accept len 1.8 → predicted {row.accept_len:.1f} ({row.low:.1f}–{row.high:.1f})" in text.plain


def test_nothing_to_predict() -> None:
    same = {**CHAIN, "speculative_num_steps": 3}
    assert prediction_text(same, same, 2.5) is None  # depth unchanged
    assert prediction_text(same, {**CHAIN, "speculative_num_steps": 5}, None) is None  # nothing observed yet
    assert prediction_text(same, None, 2.5) is None  # the edit does not resolve


def test_with_the_cockpits_speeds_it_says_what_the_rules_say() -> None:
    """#23 one voice: given the speeds the rules give the advisor (the seed: 56.8 tok/s at steps 1 against a
    90 tok/s baseline, one request), the screen's prediction is the advisor's 'off', as SPEC026's fix."""
    old, new = {**CHAIN, "speculative_num_steps": 1}, {**CHAIN, "speculative_num_steps": 3}
    text = prediction_text(old, new, 1.6, (56.8, 90.0, 1))
    assert text is not None
    adv = advise([Observed(1, 1.6, 56.8)], 90.0, 1, max_steps=10)
    assert adv.recommend.off  # premise: at this measured cost no depth pays
    assert f"×{adv.row(3).speedup:.2f} vs no speculation (against the baseline)" in text.plain
    assert "no depth beats plain decode" in text.plain
