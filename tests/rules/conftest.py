"""Helpers for rule tests: build a compiled rule from TOML text written to a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.rule_compile import Rule, load_file


@pytest.fixture
def make_rule(tmp_path: Path):
    def make(text: str, name: str = "rule.toml") -> Rule:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        rule, error = load_file(path, name)
        assert error is None, error
        assert rule is not None
        return rule

    return make
