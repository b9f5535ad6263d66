"""asyncssh and OS errors as one-line HostErrors that say what to do (shared by ssh and hostkeys)."""

from __future__ import annotations

import asyncio
import socket

import asyncssh

from spectui.errors import AuthError, ConnectError, HostError, HostKeyError, UnknownHostError


def host_error(exc: BaseException, name: str) -> HostError:
    """Map asyncssh/OS errors to one-line HostErrors that say what to do."""
    if isinstance(exc, HostError):
        return exc
    if isinstance(exc, asyncssh.PermissionDenied):
        return AuthError(
            f"{name}: permission denied (publickey); pass the right key with -i FILE, load it into "
            "ssh-agent, or check the user name"
        )
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return HostKeyError(f"{name}: host key not trusted ({exc.reason}); check --known-hosts")
    if isinstance(exc, ConnectionRefusedError):
        return ConnectError(f"{name}: connection refused; is sshd running and is the port right?")
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return ConnectError(f"{name}: timed out connecting; is the host up and reachable?")
    if isinstance(exc, socket.gaierror):
        said = exc.strerror or str(exc) or "unknown host"  # the resolver's own words
        return UnknownHostError(f"{name}: unknown host name ({said}); check the spelling or your ssh config")
    if isinstance(exc, (asyncssh.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError)):
        return ConnectError(f"{name}: connection lost ({_reason(exc)})")
    if isinstance(exc, asyncssh.ChannelOpenError):
        if "closed" in _reason(exc):
            return ConnectError(f"{name}: connection lost ({_reason(exc)})")
        return ConnectError(f"{name}: the server refused a channel ({_reason(exc)})")
    if isinstance(exc, OSError):
        return ConnectError(f"{name}: {exc.strerror or exc}; is the host up and reachable?")
    return ConnectError(f"{name}: {_reason(exc)}")


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "reason", "") or exc or type(exc).__name__).splitlines()[0][:200]
