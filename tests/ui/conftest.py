"""Fixtures for cockpit tests; their helpers are in ui_kit.py (a module of its own name: `from conftest
import …` picks whichever conftest was imported first in a mixed run)."""

from __future__ import annotations

import pytest
from ui_kit import corpus_lines


@pytest.fixture
def seed_lines() -> list[str]:
    return corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")
