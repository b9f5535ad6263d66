"""Parse a TARGET (CONTRACTS.md "Targets"): `local`, `[user@]host[:port][:/path]`, `/path`, `./log`, `-`.

Also builds the Host a target names (`open_host`), so every command connects the same way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Literal

from spectui.errors import UsageError

TargetKind = Literal["local", "ssh", "file", "stdin"]

# [user@]host  or  [user@][v6addr]   then optional :port  then optional :path
_SSH = re.compile(
    r"^(?:(?P<user>[^@/\s:]+)@)?"
    r"(?:\[(?P<v6>[0-9A-Fa-f:.%]+)\]|(?P<host>[A-Za-z0-9_.\-]+))"
    r"(?::(?P<port>\d+))?"
    r"(?::(?P<path>.+))?$"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Where the server (or its log) is. `path` is the log path on that host, when given."""

    kind: TargetKind
    host: str | None = None
    user: str | None = None
    port: int | None = None
    path: str | None = None

    @property
    def is_remote(self) -> bool:
        return self.kind == "ssh"

    def display(self) -> str:
        if self.kind == "stdin":
            return "-"
        if self.kind in ("local", "file"):
            return self.path or "local"
        dest = f"{self.user}@{self.host}" if self.user else str(self.host)
        if self.port:
            dest += f":{self.port}"
        return dest + (f":{self.path}" if self.path else "")


def parse_target(text: str) -> Target:
    """TARGET text -> Target. Raises UsageError with the accepted forms on anything else."""
    text = text.strip()
    if text == "-":
        return Target("stdin")
    if text in ("local", "localhost:", "local:"):
        return Target("local")
    if text.startswith("local:/"):
        return Target("local", path=text[len("local:") :])
    if text.startswith(("/", "./", "../", "~/")) or text in (".", ".."):
        return Target("file", path=text)
    if "@" not in text and ":" not in text and os.path.isfile(text):
        return Target("file", path=text)  # `watch server.log`: an existing local file wins over a host name
    m = _SSH.match(text)
    if not m or not text:
        raise UsageError(
            f"cannot read target {text!r}: use local, [user@]host[:port], [user@]host[:port]:/path/to/log, "
            "/path/to/log or -"
        )
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"port {port} in target {text!r} is out of range (1-65535)")
    host = m["v6"] or m["host"]
    return Target("ssh", host=host, user=m["user"], port=port, path=m["path"])


def open_host(target: Target, args: Any = None, *, read_only: bool = False) -> Any:
    """The Host for a target (not yet connected for SSH: call `await host.connect()`).

    `args` is an argparse namespace carrying the SSH options of `spectui.commands.sshopts.add_ssh_options`.
    """
    if target.kind != "ssh":
        from spectui.sources.local import LocalHost

        return LocalHost(read_only=read_only)
    from spectui.sources.ssh import SSHHost, SSHOptions

    return SSHHost(
        target.host or "",
        user=target.user,
        port=target.port,
        options=SSHOptions.from_args(args),
        read_only=read_only,
    )
