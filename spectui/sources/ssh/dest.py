"""Where an SSH target really goes and what it trusts, read from the ssh config the way OpenSSH reads it.

`destination()` resolves HostName, Port, User, HostKeyAlias, ProxyJump, the known_hosts files in force
(UserKnownHostsFile, GlobalKnownHostsFile, with OpenSSH's defaults, `~` and %-tokens expanded) and
StrictHostKeyChecking (asyncssh parses no such option: a subclass of its config reader adds it, so Host /
Match / Include blocks and first-value-wins apply to it exactly as to the others). `--known-hosts FILE`
acts like `-o UserKnownHostsFile=FILE`, `--accept-new-host-key` like `-o StrictHostKeyChecking=accept-new`.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from dataclasses import dataclass
from typing import Any

from asyncssh.config import SSHClientConfig, SSHConfig

USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
STRICT_VALUES = {"yes": "yes", "true": "yes", "ask": "yes",  # ask: nobody to ask (no tty in a TUI)
                 "accept-new": "accept-new", "no": "no", "off": "no", "false": "no"}


class _Config(SSHClientConfig):
    """asyncssh's client config reader, plus StrictHostKeyChecking."""

    _handlers = {**SSHClientConfig._handlers,
                 "stricthostkeychecking": ("StrictHostKeyChecking", SSHConfig._set_string)}


@dataclass(frozen=True, slots=True)
class Destination:
    """One SSH hop after the config: where to connect, how to name it in known_hosts, what to trust."""

    hostname: str
    port: int
    user: str | None
    key_alias: str | None  # HostKeyAlias
    user_files: tuple[str, ...]  # UserKnownHostsFile in force (new keys go to the first)
    global_files: tuple[str, ...]  # GlobalKnownHostsFile in force (read only)
    strict: str  # "yes" | "accept-new" | "no"
    proxy_jump: str | None
    config_paths: tuple[str, ...]

    @property
    def lookup_name(self) -> str:
        return self.key_alias or self.hostname

    @property
    def entry(self) -> str:
        """The host as known_hosts names it: `host` on port 22, else `[host]:port`."""
        return self.lookup_name if self.port == 22 else f"[{self.lookup_name}]:{self.port}"

    @property
    def record_file(self) -> str:
        """Where an accepted key is written: the first UserKnownHostsFile in force."""
        return self.user_files[0] if self.user_files else os.path.expanduser(USER_KNOWN_HOSTS[0])


def config_paths(ssh_config: str | None) -> tuple[str, ...]:
    """The config files asyncssh reads: -F FILE, else ~/.ssh/config when it exists."""
    if ssh_config:
        return (ssh_config,)
    default = os.path.expanduser("~/.ssh/config")
    return (default,) if os.access(default, os.R_OK) else ()


def destination(host: str, user: str | None, port: int | None, options: Any) -> Destination:
    """Resolve `host` (an alias or a name) through the ssh config of `options` (SSHOptions)."""
    paths = config_paths(options.ssh_config)
    cfg = _Config.load(None, list(paths), False, False, False, getpass.getuser(), user or (), host, port or ())
    hostname = str(cfg.get("Hostname", host) or host)
    real_port = int(str(port or cfg.get("Port", 22) or 22))  # the config value is typed object
    cfg_user = cfg.get("User")
    if options.known_hosts:
        user_files: tuple[str, ...] = (os.path.expanduser(options.known_hosts),)
    else:
        user_files = _files(cfg, "UserKnownHostsFile", USER_KNOWN_HOSTS)
    strict = "accept-new" if options.accept_new_host_key else \
        STRICT_VALUES.get(str(cfg.get("StrictHostKeyChecking") or "ask").lower(), "yes")
    alias = cfg.get("HostKeyAlias")
    jump = cfg.get("ProxyJump")
    return Destination(hostname, real_port, str(user or cfg_user) if (user or cfg_user) else None,
                       str(alias) if alias else None, user_files,
                       _files(cfg, "GlobalKnownHostsFile", GLOBAL_KNOWN_HOSTS), strict,
                       str(jump) if jump else None, paths)


def _files(cfg: Any, option: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = cfg.get(option)
    if value is None:
        return tuple(os.path.expanduser(p) for p in default)
    out = []
    for item in value:  # [] when the config says `none`
        expand = getattr(cfg, "_expand_val", None)  # %d %u %h %n %p %r %%, as OpenSSH expands them
        if expand is not None:
            with contextlib.suppress(Exception):  # an unknown token: keep the text as written
                item = expand(item)
        out.append(os.path.expanduser(item))
    return tuple(out)


def parse_jump(hop: str) -> tuple[str | None, str, int | None]:
    """`[user@]host[:port]` or `ssh://[user@]host[:port]` -> (user, host, port)."""
    hop = hop.strip().removeprefix("ssh://")
    user, _, rest = hop.rpartition("@")
    if rest.startswith("["):
        name, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    else:
        name, _, port = rest.partition(":")
    return user or None, name, int(port) if port else None
