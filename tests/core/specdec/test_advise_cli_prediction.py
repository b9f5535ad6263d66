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
