"""History deltas per relaunch: accept len and tok/s against the launch before, with a verdict."""

from __future__ import annotations

from types import SimpleNamespace as NS

from spectui.ui.screens.history import deltas


def rec(acc, tps, outcome="healthy"):
    return NS(accept_len=acc, gen_tokens_per_s=tps, outcome=outcome)


def test_deltas_and_verdicts() -> None:
    acc, tps, verdict = deltas(rec(1.8, 75.0), rec(3.1, 140.0))
    assert str(acc) == "+1.30 (+72%)" and str(tps) == "+65.0 (+87%)" and str(verdict) == "better"
    assert str(deltas(rec(3.0, 140.0), rec(2.9, 120.0))[2]) == "worse"
    assert str(deltas(rec(3.0, 140.0), rec(3.0, 141.0))[2]) == "same"
    assert str(deltas(rec(3.0, None), rec(2.0, None))[2]) == "worse"  # accept len when tok/s is unknown
    assert str(deltas(None, rec(3.0, 140.0))[2]) == "–"  # nothing before it
    assert str(deltas(rec(3.0, 140.0), rec(None, None, "rolled_back"))[2]) == "–"
