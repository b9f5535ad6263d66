"""Rule files that do not load: one line naming the file, the rule id and the field; the rest still load."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.rules import load_file, load_rules

GOOD = '''
id = "USER001"
title = "A user rule"
category = "other"
severity = "info"
diagnosis = "seen {m.text}"
explanation = "why"
[[match]]
kind = "log"
record = "warning"
contains = "hello"
[[examples]]
expect = "fire"
log = "[2025-12-03 10:00:00] WARNING hello"
'''


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    rule, error = load_file(path, "bad.toml")
    assert rule is None
    assert error is not None and "\n" not in error
    return error


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('contains = "hello"', 'contians = "hello"', "match.0.contians"),
        ('severity = "info"', 'severity = "fatal"', "severity"),
        ('category = "other"', 'category = "misc"', "category"),
        ('contains = "hello"', 'contains = "hello"\npattern = "(unclosed"', "match.0.pattern"),
        ('expect = "fire"', 'expect = "fires"', "examples.0.expect"),
        ('diagnosis = "seen {m.text}"', 'diagnosis = "seen {m.nothing}"', "diagnosis.0"),
        ('record = "warning"', 'record = "warnings"', "match.0.record"),
    ],
)
def test_typo_names_file_rule_and_field(tmp_path: Path, old: str, new: str, field: str) -> None:
    assert old in GOOD
    error = _error(tmp_path, GOOD.replace(old, new))
    assert error.startswith("bad.toml: rule USER001: field ")
    assert f"'{field}'" in error


def test_unknown_name_in_an_expression_is_refused(tmp_path: Path) -> None:
    text = GOOD + '\n[[fix]]\nset = { "--speculative-num-steps" = "requested.x + secret" }\n'
    error = _error(tmp_path, text)
    assert "field 'fix.0.set.--speculative-num-steps'" in error
    assert "secret" in error


@pytest.mark.parametrize("source", ["__import__('os').system('x')", "open('f')", "m.text.__class__", "1; 2"])
def test_expressions_are_never_code(tmp_path: Path, source: str) -> None:
    text = GOOD + f'\n[[fix]]\nset = {{ "--port" = "{source}" }}\n'.replace('"{', '"').replace("}\"", '"')
    text = GOOD + "\n[[fix]]\nset = { \"--port\" = \"" + source.replace('"', "'") + "\" }\n"
    error = _error(tmp_path, text)
    assert "rule USER001: field 'fix.0.set.--port'" in error


def test_toml_syntax_error_still_names_the_rule(tmp_path: Path) -> None:
    error = _error(tmp_path, GOOD.replace('title = "A user rule"', 'title = "A user rule'))
    assert error.startswith("bad.toml: rule USER001: TOML syntax error")


def test_warning_clauses_need_a_literal(tmp_path: Path) -> None:
    error = _error(tmp_path, GOOD.replace('contains = "hello"', 'pattern = "hel+o"'))
    assert "field 'match.0.contains'" in error and "literal" in error


def test_fix_flags_need_dashes(tmp_path: Path) -> None:
    error = _error(tmp_path, GOOD + '\n[[fix]]\nset = { "speculative-num-steps" = "3" }\n')
    assert "field 'fix.0.set'" in error


def test_bad_rule_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "typo.toml").write_text(GOOD.replace("USER001", "USER002").replace("contains", "contain"),
                                        encoding="utf-8")
    rules, errors = load_rules([tmp_path])
    ids = {r.id for r in rules}
    assert "USER001" in ids and "USER002" not in ids
    assert "SPEC001" in ids  # the built-in library is still there
    assert len(errors) == 1 and "typo.toml: rule USER002: field 'match.0.contain'" in errors[0]


def test_user_rule_replaces_builtin_with_same_id(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(GOOD.replace("USER001", "SPEC001"), encoding="utf-8")
    rules, errors = load_rules([tmp_path])
    assert errors == []
    assert [r.title for r in rules if r.id == "SPEC001"] == ["A user rule"]


def test_missing_rules_dir_is_one_line(tmp_path: Path) -> None:
    _rules, errors = load_rules([tmp_path / "nope"])
    assert len(errors) == 1 and "not a directory" in errors[0]
