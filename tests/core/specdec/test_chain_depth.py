"""NGRAM's depth is its draft-token count - 1 (SGLang's log: accept rate = (accept len - 1)/(ndt - 1)), the
EAGLE family's is num steps; a real NGRAM log line is the evidence (shared/real-sglang README)."""

from spectui.core.rules import depth
from spectui.core.specdec import chain_depth, theory


def test_ngram_depth_comes_from_draft_tokens_not_steps() -> None:
    assert chain_depth("NGRAM", None, 4) == 3 and theory.accept_len_ceiling(3) == 4
    assert chain_depth("ngram", 7, 12) == 11  # a stray num steps does not count for n-gram drafts
    assert chain_depth("NGRAM", 5, None) is None
    assert chain_depth("EAGLE3", 3, 16) == 3 and chain_depth("EAGLE", None, 4) is None


def test_real_ngram_line_saturates_at_its_ceiling() -> None:
    # "accept len: 4.00, accept rate: 1.00" with --speculative-num-draft-tokens 4 (the kit's own log)
    out = depth.depth_metrics({"accept_len": 4.0}, "NGRAM", None, None, 4)
    assert out["accept_len_ceiling"] == 4 and out["accept_len_of_ceiling"] == 1.0
    assert "advice_steps" not in out  # no num-steps advice for an n-gram draft
