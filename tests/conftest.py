"""Shared fixtures: a real OpenSSH sshd on 127.0.0.1 (tests/sshd_harness.py), one per test session;
and a home of its own for the whole run, so tests never read or write the user's spectui state."""

from __future__ import annotations

import os
from collections.abc import Iterator

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
