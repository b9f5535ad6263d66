"""Host keys the OpenSSH way: an untrusted key is refused with its fingerprint and the exact way to accept
it, or recorded under the real HostName/Port when --accept-new-host-key is given (never when it changed)."""

from __future__ import annotations

import getpass
import os
from typing import Any

import asyncssh

from spectui.errors import HostKeyError
from spectui.sources.ssherrors import host_error


def resolve_destination(host: Any) -> tuple[str, int, str]:
    """(HostName, Port, known_hosts file) of an SSHHost after its ssh config, as OpenSSH would use them."""
    from asyncssh.config import SSHClientConfig

    opts = host.options
    paths = [opts.ssh_config] if opts.ssh_config else []
    default = os.path.expanduser("~/.ssh/config")
    if not paths and os.path.exists(default):
        paths = [default]
    cfg = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(),
                               host.user or (), host.host, host.port or ())
    hostname = str(cfg.get("Hostname", host.host) or host.host)
    port = int(str(host.port or cfg.get("Port", 22) or 22))  # the config value is typed object
    known_hosts = opts.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
    return hostname, port, known_hosts


def has_entry(known_hosts: str, hostname: str, port: int) -> bool:
    """Whether known_hosts already trusts some key for this host (then a mismatch means it changed)."""
    try:
        kh = asyncssh.read_known_hosts(known_hosts)
    except (OSError, ValueError):
        return False
    return bool(kh.match(hostname, "", port)[0])


async def handle_untrusted_key(host: Any) -> None:
    """Called when the server's key is not trusted: raise HostKeyError, or record it (accept-new)."""
    hostname, port, kh = resolve_destination(host)
    config = [host.options.ssh_config] if host.options.ssh_config else ()
    try:
        key = await asyncssh.get_server_host_key(host.host, host.port or (), config=config)
    except Exception as exc:
        raise host_error(exc, host.name) from None
    if key is None:
        raise HostKeyError(f"{host.name}: the server offered no host key; check the host")
    fp, alg = key.get_fingerprint("sha256"), key.get_algorithm()
    entry = hostname if port == 22 else f"[{hostname}]:{port}"
    if has_entry(kh, hostname, port):
        raise HostKeyError(
            f"{host.name}: host key CHANGED ({alg} {fp}) - possible man-in-the-middle; if the host was "
            f"reinstalled, remove the old key with `ssh-keygen -R '{entry}' -f {kh}` and reconnect"
        )
    if not host.options.accept_new_host_key:
        scan = f"ssh-keyscan -p {port} {hostname}" if port != 22 else f"ssh-keyscan {hostname}"
        raise HostKeyError(
            f"{host.name}: unknown host key {alg} {fp}; if it is right, re-run with --accept-new-host-key "
            f"or run `{scan} >> {kh}`"
        )
    os.makedirs(os.path.dirname(os.path.abspath(kh)), exist_ok=True)
    with open(kh, "a", encoding="ascii") as f:
        f.write(f"{entry} {key.export_public_key('openssh').decode().strip()}\n")
