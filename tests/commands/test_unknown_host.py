"""#24: a misspelt host name is not retried for ever: after UNKNOWN_HOST_TRIES resolver failures the
command ends with the resolver's own error, one line, exit 2 (a host that is down is still retried)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys

import pytest

from spectui.commands.connect import UNKNOWN_HOST_TRIES, connect_with_retry
from spectui.errors import ConnectError, UnknownHostError
from spectui.sources.ssh.errors import host_error

BAD = "no-such-host-spectui.invalid"  # .invalid never resolves (RFC 6761)


@pytest.mark.parametrize("argv", [["connect", BAD], ["watch", BAD], ["report", BAD],
                                  ["record", BAD, "-o", "/tmp/never-written.spectui.tar.gz"], ["inspect", BAD]])
def test_unknown_host_is_one_line_exit_2(argv) -> None:
    out = subprocess.run([sys.executable, "-m", "spectui", *argv], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"spectui {argv[0]}: {BAD}: unknown host name (")  # the resolver's words follow
    try:
        socket.getaddrinfo(BAD, 22)
    except socket.gaierror as exc:
        assert f"({exc.strerror})" in lines[0]


def test_gaierror_maps_to_unknown_host_with_exit_2() -> None:
    err = host_error(socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "gpu1")
    assert isinstance(err, UnknownHostError) and isinstance(err, ConnectError) and err.exit_code == 2
    assert str(err) == "gpu1: unknown host name (Name or service not known); check the spelling or your ssh config"


class FlakyHost:
    name = "h"

    def __init__(self, errors: list[Exception]) -> None:
        self.errors, self.tries = errors, 0

    async def connect(self) -> None:
        self.tries += 1
        if self.errors:
            raise self.errors.pop(0)


def test_tries_are_bounded_for_unknown_names_only(monkeypatch) -> None:
    monkeypatch.setattr("spectui.sources.tail.BACKOFF", (0.0,))
    said: list[str] = []
    host = FlakyHost([UnknownHostError("h: unknown host name (x)") for _ in range(10)])
    with pytest.raises(UnknownHostError):
        asyncio.run(connect_with_retry(host, say=said.append))
    assert host.tries == UNKNOWN_HOST_TRIES and said == []  # quiet retries, then the one line
    # a host that is down (refused) is retried until it answers, as before
    host = FlakyHost([ConnectError("h: connection refused") for _ in range(5)])
    asyncio.run(connect_with_retry(host, say=said.append))
    assert host.tries == 6 and len(said) == 6  # five "reconnecting" lines and "connected"
