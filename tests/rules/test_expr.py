"""The rule expression language: arithmetic, comparisons, undefined names, and nothing else."""

from __future__ import annotations

import pytest

from spectui.core.rules import expr as ruleexpr

ALL = lambda name: True  # noqa: E731


def ev(source: str, **values):
    expr = ruleexpr.parse(source, ALL)
    return expr.try_evaluate(lambda n: values.get(n.replace(".", "_")))


@pytest.mark.parametrize(
    ("source", "values", "expected"),
    [
        ("requested.speculative_num_draft_tokens - 1", {"requested_speculative_num_draft_tokens": 16}, 15),
        ("min(a, b) + max(a, b) * 2", {"a": 1, "b": 4}, 9),
        ("a × 2 ÷ 4", {"a": 6}, 3.0),
        ("a // 2", {"a": 7}, 3),
        ("-a + 1", {"a": 2}, -1),
        ("a != b and not (a > 3)", {"a": 2, "b": 16}, True),
        ("a == 1 or b == 2", {"b": 2}, True),  # undefined left side of `or` is not fatal
        ("if(t == 1, d - 1, 3)", {"t": 1, "d": 16}, 15),
        ("if(t == 1, d - 1, 3)", {"d": 16}, 3),  # undefined condition counts as false
        ("defined(x)", {}, False),
        ("defined(x)", {"x": 0}, True),
        ("contains(e, '--num-speculative-tokens')", {"e": "unrecognized arguments: --num-speculative-tokens 4"}, True),
        ("int(v) + 1", {"v": "16"}, 17),
        ("round(a, 1)", {"a": 1.26}, 1.3),
        ("'EAGLE3'", {}, "EAGLE3"),
    ],
)
def test_evaluate(source: str, values: dict, expected) -> None:
    assert ev(source, **values) == (True, expected)


@pytest.mark.parametrize("source", ["a - 1", "a < 2", "max(a, 1)"])
def test_undefined_name_makes_the_expression_undefined(source: str) -> None:
    assert ev(source) == (False, None)


def test_type_errors_are_undefined_not_crashes() -> None:
    assert ev("a < 2", a="x") == (False, None)
    assert ev("a / b", a=1, b=0) == (False, None)


@pytest.mark.parametrize("source", ["a +", "(a", "f(a)", "a.b(", "a ; b", "a = 1", "lambda: 1", "a[0]"])
def test_parse_errors(source: str) -> None:
    with pytest.raises(ruleexpr.ExprError):
        ruleexpr.parse(source, ALL)


def test_vocabulary_is_checked_at_parse() -> None:
    with pytest.raises(ruleexpr.ExprError, match="unknown name 'b'"):
        ruleexpr.parse("a + b", lambda n: n == "a")


@pytest.mark.parametrize(("value", "text"), [(15.0, "15"), (15, "15"), (0.85, "0.85"), (True, ""), ("x", "x")])
def test_render_value(value, text: str) -> None:
    assert ruleexpr.render_value(value) == text
