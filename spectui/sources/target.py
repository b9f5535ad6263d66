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


def server_line(proc: Any) -> str:
    """One server of a listing: pid, port, model, speculative algorithm (what tells them apart)."""
    from spectui.core.launch import flag_value

    argv = list(proc.argv)
    model = flag_value(argv, "--model-path", "--model") or "?"
    algo = flag_value(argv, "--speculative-algorithm", "--speculative-algo") or "none"
    shown = "".join(ch if ch.isprintable() else "?" for ch in f"model {model}  algorithm {algo}")
    return f"  pid {proc.pid:<8} port {proc.port!s:<6} {shown}"


def several_message(host_name: str, servers: Any) -> str:
    """"N SGLang servers on HOST; pick one with --pid PID or --server-port PORT:" and one line each."""
    head = (f"{len(servers)} SGLang servers on {host_name}; pick one with --pid PID or --server-port PORT "
            "(or name its log: HOST:/path/to/log):")
    return "\n".join([head, *(server_line(s) for s in servers)])


async def pick_one(host: Any, pid: int | None = None, port: int | None = None) -> Any:
    """The one server a command acts on, named the same way everywhere: `pid`, else the one listening on
    `port`, else the host's only one. sources.discover.SeveralServers (listing pid, port, model and
    algorithm of each) when it must be picked; DiscoveryError when there is none."""
    from spectui.errors import DiscoveryError
    from spectui.sources.discover import SeveralServers, discover, pick_server

    if pid is not None:
        return await pick_server(host, pid)  # its own messages: "no process N", "not an SGLang server"
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"--server-port {port} is out of range (1-65535)")
    servers = await discover(host)
    if port is not None:
        on_port = [s for s in servers if s.port == port]
        if len(on_port) == 1:
            return on_port[0]
        if not on_port:
            listing = "".join(f"\n{server_line(s)}" for s in servers)
            raise DiscoveryError(f"no SGLang server listens on port {port} on {host.name}"
                                 + (f"; the servers there:{listing}" if servers else ""))
        servers = on_port
    if len(servers) > 1:
        raise SeveralServers(several_message(host.name, servers), servers)
    if not servers:
        return await pick_server(host, None)  # "no SGLang server found on HOST; give the log path …"
    return servers[0]
