"""Host keys exactly as OpenSSH checks them, decided inside the one connection attempt.

Trusted keys come from every known_hosts file in force (UserKnownHostsFile then GlobalKnownHostsFile,
ssh.dest.Destination), matched by HostKeyAlias or HostName as `host` / `[host]:port`; a file that does not
exist trusts nothing (it is not an error). A key that is not trusted is judged in
`validate_host_public_key`:

* the host has an entry with another key: CHANGED. Always refused, whatever StrictHostKeyChecking or
  --accept-new-host-key say, with the `ssh-keygen -R` line naming the file that holds the old entry;
  nothing is written.
* no entry at all: unknown. StrictHostKeyChecking=yes (and ask: nobody to ask) refuses with the
  fingerprint and both ways to accept; accept-new (or --accept-new-host-key) and no trust it and record it
  in the first UserKnownHostsFile in force, once the server has proven it holds the key.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import asyncssh

from spectui.errors import HostKeyError
from spectui.sources.ssh.dest import Destination

_EMPTY: tuple[list[Any], ...] = ([], [], [], [], [], [], [])


def _load(path: str) -> Any:
    try:
        return asyncssh.read_known_hosts(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise HostKeyError(f"cannot read known_hosts file {path}: {exc}") from None


def _match(kh: Any, host: str, port: int | None) -> Any:
    # OpenSSH looks `[host]:port` up for a non-default port and never falls back to the bare name;
    # SSHKnownHosts.match does fall back, its _match does not.
    exact = getattr(kh, "_match", None)
    return exact(host, "", port) if exact is not None else kh.match(host, "", port)


class HostKeyCheck:
    """The known_hosts callable and the untrusted-key judge for one connection attempt to `dest`."""

    def __init__(self, dest: Destination, name: str) -> None:
        self.dest = dest
        self.name = name
        self.refusal: HostKeyError | None = None
        self._record: str | None = None
        self._loaded = [(p, _load(p)) for p in (*dest.user_files, *dest.global_files)]

    def known_hosts(self, host: str, addr: str, port: int | None) -> Any:
        """asyncssh `known_hosts=` callable: what every file in force trusts for this host."""
        merged: list[list[Any]] = [[] for _ in _EMPTY]
        for _, kh in self._loaded:
            if kh is None:
                continue
            for acc, found in zip(merged, _match(kh, host, port), strict=False):
                acc.extend(found)
        return tuple(merged)

    def _holders(self, host: str, port: int | None) -> list[str]:
        """Files with some entry (a key or a CA) for this host: a mismatch there means it CHANGED."""
        out = []
        for path, kh in self._loaded:
            if kh is not None:
                found = _match(kh, host, port)
                if found[0] or found[1]:
                    out.append(path)
        return out

    def validate(self, host: str, port: int | None, key: Any) -> bool:
        """A key no file trusts: refuse it (recording why) or accept it as new."""
        fp, alg = key.get_fingerprint("sha256"), key.get_algorithm()
        entry = self.dest.entry
        holders = self._holders(host, None if port == 22 else port)
        if holders:
            fixes = " and ".join(f"`ssh-keygen -R '{entry}' -f {p}`" for p in holders)
            self.refusal = HostKeyError(
                f"{self.name}: host key CHANGED (now {alg} {fp}) - possible man-in-the-middle; if the host "
                f"was reinstalled, remove the old key with {fixes} and reconnect")
            return False
        if self.dest.strict == "yes":
            scan = f"ssh-keyscan -p {self.dest.port} {self.dest.hostname}" if self.dest.port != 22 \
                else f"ssh-keyscan {self.dest.hostname}"
            self.refusal = HostKeyError(
                f"{self.name}: unknown host key {alg} {fp}; if it is right, re-run with --accept-new-host-key "
                f"or run `{scan} >> {self.dest.record_file}`")
            return False
        self._record = f"{entry} {key.export_public_key('openssh').decode().strip()}\n"
        return True

    def record(self) -> None:
        """The server proved it holds the new key: append it to the first UserKnownHostsFile in force."""
        line, self._record = self._record, None
        if line is None:
            return
        path = self.dest.record_file
        with contextlib.suppress(FileExistsError):
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        try:
            with open(path, "a", encoding="ascii") as f:
                f.write(line)
        except OSError as exc:
            raise HostKeyError(f"{self.name}: cannot record the new host key in {path}: {exc.strerror}") from None

    def client_factory(self) -> type[asyncssh.SSHClient]:
        check = self

        class _Client(asyncssh.SSHClient):
            def validate_host_public_key(self, host: str, addr: str, port: int, key: Any) -> bool:
                return check.validate(host, port, key)

        return _Client

    def connect_kwargs(self) -> dict[str, Any]:
        return {"known_hosts": self.known_hosts, "client_factory": self.client_factory()}
