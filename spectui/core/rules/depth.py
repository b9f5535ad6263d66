"""Accept length judged against what the algorithm and depth should reach (not a fixed threshold).

`depth_metrics` adds, for a decode window: `ceiling` math from specdec.advisor (1 + min(steps, draft tokens -
1)), the typical accept length for the algorithm at that depth (specdec.fit.expected_accept_len with a typical
per-position acceptance for the algorithm; a chain, so a tree's expectation is higher: the judgement errs on
the quiet side), and the advisor's depth verdict (depth_advice) for the diagnosis text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spectui.core.specdec import ceiling, chain_depth, depth_advice, expected_accept_len

# Typical per-position acceptance (a1, decay r) of a draft trained for its target, on chat traffic: EAGLE3
# chains reach ~2.9 at 3 steps, ~3.4 at 5 (docs/SPECDEC.md §2.3 SpecBundle sweeps, Llama-3.1-8B 2.5-3.2 at 3/1/4);
# EAGLE(-2) drafts sit lower; built-in MTP heads ~1.8-1.9 at one step (docs/SPECDEC.md §2.4).
TYPICAL: dict[str, tuple[float, float]] = {
    "EAGLE3": (0.80, 0.95), "EAGLE": (0.72, 0.93), "NEXTN": (0.85, 0.90), "STANDALONE": (0.70, 0.93),
}


def depth_metrics(agg: Mapping[str, Any], algorithm: Any, steps: Any, topk: Any, draft_tokens: Any,
                  running: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    accept = agg.get("accept_len")
    if str(algorithm or "").upper() == "NGRAM":  # NGRAM's depth is its draft tokens - 1 (specdec.chain_depth)
        steps, topk = chain_depth(algorithm, steps, draft_tokens), 1
    if accept is None or not isinstance(steps, int) or steps < 1:
        return out
    top = topk if isinstance(topk, int) and topk > 0 else 1
    ndt = draft_tokens if isinstance(draft_tokens, int) else None
    cap = ceiling(steps, top, ndt)
    out["accept_len_ceiling"] = cap
    out["accept_len_of_ceiling"] = accept / cap
    typical = TYPICAL.get(str(algorithm).upper()) if algorithm else None
    if typical is not None:
        out["accept_len_expected"] = expected_accept_len(typical[0], typical[1], cap - 1)
    if str(algorithm or "").upper() == "NGRAM":
        return out  # the advisor's depth model is a trained draft's (num steps): no verdict for n-gram drafts
    if isinstance(agg.get("advice_steps"), int):  # spec_math's: the advisor with this window's speeds and
        k = agg["advice_steps"]                    # baseline, the one recommendation every rule names (#23)
        out["advice_direction"] = "off" if k == 0 else "keep" if k == steps else "deeper" if k > steps else "shallower"
        return out
    try:
        verdict = depth_advice(steps, min(max(accept, 1.0), float(cap)), running=running, intervals=False)
    except Exception:  # the advisor refuses odd inputs; the other figures still hold
        return out
    out["advice_steps"] = verdict.steps
    out["advice_direction"] = verdict.direction
    return out
