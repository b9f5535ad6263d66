"""Fixtures for the load generator tests; their helpers are in load_kit.py (a module of its own name)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from load_kit import run_sim


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with run_sim() as url:
        yield url
