"""#23: `predicted` rows carry speedup (x no speculation, per request) with its interval, the running config
is always a row, the baseline says measured / given / modelled, and where a measured speedup disagrees with
the model the measurement wins (it decides the recommendation, and the answer says so)."""

from __future__ import annotations

import pytest

from spectui.core.specdec import Observed, advise


def ref_accept_len(a1: float, r: float, k: int) -> float:
    total, prod = 1.0, 1.0
    for i in range(1, k + 1):
        prod *= min(1.0, a1 * r ** (i - 1))
        total += prod
    return total


def test_rows_carry_speedup_and_interval_against_a_measured_baseline() -> None:
    # A serving model with a fixed spec overhead (ms): t_round(k) = 10 + 15 + 1 k; no speculation 10.
    def speed(k: int) -> float:
        return ref_accept_len(0.8, 0.97, k) / (25.0 + k) if k else 1 / 10.0
    obs = [Observed(k, ref_accept_len(0.8, 0.97, k), speed(k)) for k in (1, 3)]
    adv = advise(obs, baseline_per_request_tps=speed(0), running=1, baseline_source="measured")
    out = adv.to_json()
    assert out["baseline"] == {"source": "measured", "tokens_per_s": pytest.approx(0.1), "cost": "measured"}
    for row in out["predicted"]:
        sp = row["speedup"]
        assert sp["low"] <= sp["value"] <= sp["high"]
        assert sp["value"] == pytest.approx(speed(row["steps"]) / speed(0), rel=0.03)  # the truth, independent
    assert out["predicted"][0]["measured_speedup"] == pytest.approx(speed(1) / speed(0), abs=6e-4)  # JSON: 3 dp
    assert out["measurement_wins"] == []  # the line fits both measurements: nothing to overrule
    assert "measured no-spec baseline" in out["recommend"]["why"]


def test_the_running_config_is_a_row_and_an_unknown_baseline_is_modelled() -> None:
    adv = advise([(12, 4.1)], max_steps=5, running_steps=12)
    rows = adv.to_json()["predicted"]
    assert [r["steps"] for r in rows] == list(range(1, 13))
    assert [r["steps"] for r in rows if r.get("running")] == [12]
    assert adv.to_json()["baseline"]["source"] == "modelled" and all("speedup" in r for r in rows)
    assert "modelled no-spec speed" in adv.recommend.why or adv.recommend.off


def test_a_measurement_that_disagrees_with_the_model_wins() -> None:
    base = 100.0
    # steps 1 and 5 on one line; steps 3 measured 1.30x, well above what the line through all three predicts
    obs = [Observed(1, 1.8, 80.0), Observed(3, 2.8, 130.0), Observed(5, 3.4, 90.0)]
    adv = advise(obs, baseline_per_request_tps=base, running=4)
    row3 = adv.row(3)
    assert row3.measured_speedup == pytest.approx(1.30) and row3.speedup < 1.2
    assert any(w.startswith("steps 3: measured 1.30x") and "the measurement wins" in w for w in adv.measurement_wins)
    assert adv.recommend.steps == 3 and "maximises measured per-request speed" in adv.recommend.why
    assert adv.speedup == pytest.approx(1.30) and "the measurement wins" in adv.recommend.why
    assert adv.to_json()["baseline"]["source"] == "given"


def test_two_windows_of_one_server_name_one_depth() -> None:
    """The rules (one window, no intervals) and `advise` (the last lines, intervals) read the same server a
    little differently; on a flat optimum (no baseline: the modelled cost) they named steps 3 and 4. The
    shallowest depth within 2 % of the fastest is one answer for both."""
    from spectui.core.specdec import depth_advice

    a = advise([Observed(1, 1.79, 2540.0)], running=1)
    b = advise([Observed(1, 1.80, 2557.0)], running=1, intervals=False)
    assert a.recommend.steps == b.recommend.steps > 1
    assert depth_advice(1, 1.795, 2550.0, running=1, intervals=False).steps == a.recommend.steps
