"""Shared fixtures: a real OpenSSH sshd on 127.0.0.1 (tests/sshd_harness.py), one per test session;
and a home of its own for the whole run, so tests never read or write the user's spectui state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_harness import Sshd, sshd_available, start_sshd  # noqa: E402

# The terminal size variables as the test run's own process sees them. pytest-xdist's workers (addopts in
# pyproject.toml) are started with COLUMNS=80 / LINES=24 in their environment even when the run has none:
# the controller's C environment has them, its os.environ does not. Output widths of spectui's commands
# follow COLUMNS, so a worker puts back what the controller's os.environ says.
_TERMINAL_VARS = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # type: ignore[no-untyped-def]  # xdist, in the controller
    node.workerinput["spectui_terminal_env"] = {k: os.environ.get(k) for k in _TERMINAL_VARS}


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    """One line when the real-server tier (tests/real) was skipped because the kit is not built here."""
    from realkit import missing

    why = missing()
    if why and not os.environ.get("CI"):
        terminalreporter.write_line(f"real-server tier (tests/real) skipped: {why}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real: runs against a real SGLang server (shared/real-sglang kit)")
    wanted = getattr(config, "workerinput", {}).get("spectui_terminal_env")  # only in an xdist worker
    for key, value in (wanted or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


# The fast tier (`pytest -m "not slow"`): a test is `slow` when it starts real processes or drives the whole
# cockpit — it takes a fixture that starts one (sshd, the fleet's Prometheus and simulators, the simulator
# lab, the real server), or its module's source uses what does (the simulator, a demo, sshd, the real
# server, a stub SGLang, Chromium, any subprocess, `python -m spectui …` included; Textual's `run_test`).
# Marked here, by what a test uses, not by hand.
SLOW_FIXTURES = frozenset({"sshd", "ssh_args", "fleet", "sim_url", "lab", "sim_factory", "kit_server", "real_state"})
SLOW_SOURCE = ("subprocess", "SimLab", "Sshd", "start_sshd", "start_real", "RealServer", "run_sim", "start_sim",
               "start_bed", "DemoRun", "started(", "stub_server", "fake_sglang", "playwright", "run_test(",
               "create_subprocess")
_slow_modules: dict[Path, bool] = {}


def is_slow(item: pytest.Item) -> bool:
    path = Path(str(item.path))
    if path not in _slow_modules:
        text = path.read_text(encoding="utf-8", errors="replace") if path.suffix == ".py" else ""
        _slow_modules[path] = path.parent.name == "real" or any(t in text for t in SLOW_SOURCE)
    return _slow_modules[path] or bool(SLOW_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def _own_xdg_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Rule cache, launch history and user rules of the test run live in a temp dir (subprocesses too)."""
    base = tmp_path_factory.mktemp("xdg")
    saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")}
    for key in saved:
        os.environ[key] = str(base / key.lower())
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A running sshd; `sshd.target`, `sshd.client_key`, `sshd.known_hosts`, `sshd.kill_sessions()`."""
    if not sshd_available():
        pytest.fail("OpenSSH sshd is not installed: apt-get install openssh-server (.ci/run does this)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ssh_args(sshd: Sshd) -> object:
    """An argparse-like namespace with the SSH options for the test sshd."""
    import argparse

    return argparse.Namespace(ssh_config="/dev/null", identity=[str(sshd.client_key)],
                              known_hosts=str(sshd.known_hosts), accept_new_host_key=False)
