"""Fixtures for relaunch tests (helpers in ops_simlab.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ops_simlab import SimLab, free_port


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimLab]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "run dir"
    root.mkdir()
    lab = SimLab(root, free_port())
    try:
        yield lab
    finally:
        lab.cleanup()
