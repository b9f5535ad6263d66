"""The real-server tier: tests against a real SGLang (shared/real-sglang, built by `.ci/run`).

Every test here carries the `real` marker. Where the kit is not built, a developer's run skips the tier
(tests/conftest.py prints one line saying why and how to build it); under CI (CI=true) a missing kit is a
failure, never a silent skip. One server per module where the module can share it (start-up costs 20–45 s).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from realkit import RealServer, missing, start_real

REAL_DIR = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    why = missing()
    for item in items:
        if REAL_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real)
            item.add_marker(pytest.mark.timeout(900))  # a real start-up is 20-90 s; relaunches add several
            if why and not os.environ.get("CI"):
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="module", autouse=True)
def _kit_built() -> None:
    why = missing()
    if why:  # only reached under CI (elsewhere the tests were marked skip at collection)
        pytest.fail(f"CI runs the real-server tier and {why}")


@pytest.fixture(scope="module")
def real_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A state folder (launch history, bench results) for the module's spectui runs."""
    state = tmp_path_factory.mktemp("real-state")
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(state)
    try:
        yield state
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved


@pytest.fixture(scope="module")
def kit_server(tmp_path_factory: pytest.TempPathFactory, real_state: Path) -> Iterator[RealServer]:
    """The kit's default server (NGRAM, 4 draft tokens), healthy, for the whole module; stopped by its group."""
    server = start_real(tmp_path_factory.mktemp("kit") / "run", [])
    try:
        server.wait_healthy()
        yield server
    finally:
        server.stop()


