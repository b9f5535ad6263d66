"""Shared fixtures: a real OpenSSH sshd on 127.0.0.1 (tests/sshd_harness.py), one per test session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/sshd_harness.py is importable from any test

from sshd_harness import Sshd, sshd_available, start_sshd  # noqa: E402


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
