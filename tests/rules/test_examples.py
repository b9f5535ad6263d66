"""Every rule in rules/ loads, has examples, and each example fires / does not fire as it says."""

from __future__ import annotations

import pytest

from spectui.core.rules import load_rules, run_example

RULES, ERRORS = load_rules()


def test_library_loads_without_errors() -> None:
    assert ERRORS == []
    assert len(RULES) >= 3


def test_every_rule_has_firing_and_non_firing_examples() -> None:
    for rule in RULES:
        kinds = {ex.expect for ex in rule.examples}
        assert kinds == {"fire", "no-fire"}, f"{rule.id} ({rule.path}) needs both kinds of examples"


@pytest.mark.parametrize(
    ("rule", "index"),
    [(rule, i) for rule in RULES for i in range(len(rule.examples))],
    ids=[f"{rule.id}-{i}-{ex.expect}" for rule in RULES for i, ex in enumerate(rule.examples)],
)
def test_example(rule, index: int) -> None:
    result = run_example(rule, index)
    assert result.ok, f"{rule.path} example {index}: {result.detail}"


def test_examples_hold_with_the_whole_library_loaded() -> None:
    # Fallback rules step aside for specific ones; that must not change what a rule's own examples show.
    failures = []
    for rule in RULES:
        for i, ex in enumerate(rule.examples):
            if ex.expect == "fire":
                result = run_example(rule, i, RULES)
                if not result.ok:
                    failures.append(f"{rule.id}[{i}]: {result.detail}")
    assert failures == []


def test_every_reference_table_row_has_a_rule() -> None:
    # docs/REFERENCE.md §7 rows R1-R22: each rule file names the rows it implements in its header comment.
    import re
    from pathlib import Path

    named = set()
    for rule in RULES:
        text = Path(__file__).resolve().parents[2].joinpath(rule.path).read_text(encoding="utf-8")
        header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
        named |= {int(n) for n in re.findall(r"\bR(\d+)\b", header)}
    assert set(range(1, 23)) <= named
