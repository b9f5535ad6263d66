"""What is known of a server that no longer runs, so that it can be started again (ops.relaunch.run's
`prepare_any`): the last launch of the process that wrote a log, had a pid, or ran last on this host.

Where it comes from, best first: what the caller saw while it ran (the cockpit's discovery: argv,
environment, cwd exactly); the launch history (its command, cwd and launch-steering variables; secret
values are masked there, so they are left out and named); the log itself (a launch line such as
`# launch: python -m sglang.launch_server …` or a shell trace, else a command rebuilt from its
`server_args=` line). Every KnownCommand says where it came from and how much of its environment is
known (`source`, `env_note`); an environment not known is this login's, said so.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spectui.ops.history import HistoryStore, LaunchRecord
from spectui.sources.base import ServerProcess

HEAD_BYTES = 256 * 1024  # a launch line and the server_args= line come in a log's first lines
_ASSIGN = r"(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
_LAUNCH = re.compile(r"(?<!['\"])(?:^|(?<=\s))(" + _ASSIGN
                     + r"(?:\S*/)?(?:python[\d.]*\s+-m\s+(?:sglang\.launch_server|spectui\.sim)|sglang\s+serve)\s+--\S.*)$")
# server_args fields worth a flag when the command is rebuilt from that line (the rest keep their defaults)
_REBUILT = ("model_path", "tokenizer_path", "served_model_name", "host", "port", "tp_size", "dp_size",
            "pp_size", "ep_size", "mem_fraction_static", "context_length", "max_running_requests",
            "trust_remote_code", "enable_metrics", "speculative_algorithm", "speculative_draft_model_path",
            "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
_DEFAULTS = {"tp_size": 1, "dp_size": 1, "pp_size": 1, "ep_size": 1}


@dataclass(frozen=True, slots=True)
class KnownCommand:
    """A server command to start when no server runs (the last one crashed): what a sweep or a plan knew
    of the last server — its argv, environment, working directory, log (the new log goes beside it), port."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    log_path: str | None
    port: int | None = None
    host_addr: str = "127.0.0.1"
    pid: int | None = None  # the last server's pid (gone): checked not to run it still, its GPU memory waited for
    program: str = ""
    source: str = ""  # where the command is known from (ops.relaunch.known): shown in the plan
    env_note: str = ""  # how much of its environment is known ("" = exactly, read from /proc while it ran)
    sglang_version: str | None = None  # the release it was judged with last (history), when known
    uid: int | None = None  # the last server's owner (it is started again as that user or not at all); None: not known
    user: str = ""

    @classmethod
    def of(cls, server: ServerProcess, *, source: str = "") -> KnownCommand:
        return cls(tuple(server.argv), dict(server.env), server.cwd, server.log_path, server.port,
                   server.host_addr, server.pid, server.program, source=source, uid=server.uid, user=server.user)


async def log_owner(host: Any, log: str | None) -> tuple[int | None, str, str]:
    """(uid, user, note) of a gone server's owner as its log says (the file its redirection created), or
    (None, "", "") when there is no log to ask."""
    from spectui.ops.relaunch.owner import describe, path_owner

    found = await path_owner(host, log) if log else None
    if found is None:
        return None, "", ""
    return found[0], found[1], f"; owner {describe(found[1], found[0])}: the owner of its log"


def known_of(server: Any, *, source: str = "") -> Any:
    """The KnownCommand of a ServerProcess seen while it ran (its environment read from /proc: exact)."""

    return KnownCommand.of(server, source=source or f"pid {server.pid} as discovered while it ran")


async def login_env(host: Any) -> dict[str, str]:
    """The environment a command run on `host` gets (this login's): the base when the server's is not known."""
    res = await host.run(["cat", "/proc/self/environ"], timeout=10)
    if res.exit_status != 0 or not res.stdout:
        return {k: v for k, v in os.environ.items()} if getattr(host, "name", "") == "local" else {}
    return dict(e.split("=", 1) for e in res.stdout.split("\0") if "=" in e)


def _port_addr(argv: list[str]) -> tuple[int, str]:
    from spectui.sources.discover import DEFAULT_PORT, flag_value

    port = flag_value(argv, "--port")
    addr = flag_value(argv, "--host") or "127.0.0.1"
    return (int(port) if port and port.isdigit() else DEFAULT_PORT,
            "127.0.0.1" if addr in ("0.0.0.0", "::", "") else addr)


def _unmasked(argv: list[str]) -> tuple[list[str], list[str]]:
    """argv without the secret flags history masked (`--api-key ***`), and those flags' names."""
    out: list[str] = []
    dropped: list[str] = []
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word.startswith("--") and word.endswith("=***"):
            dropped.append(word.split("=", 1)[0])
            continue
        if word.startswith("--") and "=" not in word and argv[i + 1:i + 2] == ["***"]:
            dropped.append(word)
            skip = True
            continue
        out.append(word)
    return out, dropped


def _record_for(records: list[LaunchRecord], pid: int | None, log: str | None) -> tuple[LaunchRecord, str] | None:
    """The newest record that started the server with `pid` / writing `log` (or, with neither, the last
    server started on the host): (record, the command that server runs)."""
    norm = os.path.normpath(log) if log else None
    for r in reversed(records):
        started = [(r.new_pid, r.log, r.command)]
        if r.rollback_pid is not None and r.old_command:
            started.append((r.rollback_pid, r.rollback_log, r.old_command))
        for p, lg, command in started:
            if pid is not None and p == pid:
                return r, command
            if norm is not None and lg and os.path.normpath(lg) == norm:
                return r, command
        if pid is None and norm is None:
            if r.outcome == "healthy":
                return r, r.command
            if r.outcome == "rolled_back" and r.old_command:
                return r, r.old_command
    return None


async def from_history(host: Any, store: HistoryStore, *, pid: int | None, log: str | None) -> Any:
    from spectui.sources.discover import program_of

    found = _record_for(store.read(host=host.name), pid, log)
    if found is None:
        return None
    rec, command = found
    try:
        argv, dropped = _unmasked(shlex.split(command))
    except ValueError:
        return None
    if not argv or program_of(argv) is None:
        return None
    env = await login_env(host)
    masked = sorted(k for k, v in rec.env.items() if v == "***")
    env.update({k: v for k, v in rec.env.items() if v != "***"})
    if rec.env:
        note = (f"environment: this login's, with the {len(rec.env)} SGLANG_/CUDA_/… variables the history "
                "recorded; the rest of the old server's environment is not known")
    else:
        note = "environment not known (not in the history record): the new server gets this login's environment"
    if masked:
        note += f"; {', '.join(masked)} masked in the history: not set (add it with --set-env NAME=VALUE)"
    if dropped:
        note += f"; {', '.join(dropped)} masked in the history: left out (add it with --set FLAG=VALUE)"
    cwd = rec.cwd or os.path.dirname(rec.log or log or "") or "/"
    if not rec.cwd:
        note += f"; working directory not recorded: {cwd}"
    port, addr = _port_addr(argv)
    last_pid = pid if pid is not None else (rec.new_pid if command == rec.command else rec.rollback_pid)
    if rec.owner_uid is not None:
        uid, user = rec.owner_uid, rec.owner_user
    else:  # a record from before owners were kept: the log's owner
        uid, user, owner_note = await log_owner(host, log or rec.log)
        note += owner_note
    return KnownCommand(tuple(argv), env, cwd, log or rec.log, port, addr, last_pid, program_of(argv) or "",
                        source=f"the launch history (record {rec.id}, {rec.time})", env_note=note,
                        sglang_version=rec.sglang_version, uid=uid, user=user)


def launch_in_log(text: str) -> Any:
    """The launch command a log names (a `# launch: …` line, a shell trace `+ python -m …`), or None."""
    from spectui.core.launch import parse_command

    for line in text.splitlines():
        if "Example:" in line or "still supported" in line:
            continue  # SGLang's own deprecation warning quotes a command
        m = _LAUNCH.search(line.rstrip())
        if m is None:
            continue
        try:
            cmd = parse_command(m.group(1))
        except Exception:  # noqa: BLE001 - a line that only looks like a command
            continue
        if cmd.placeholders or not cmd.args:
            continue
        return cmd
    return None


def rebuilt_from_server_args(fields: Mapping[str, object]) -> list[str] | None:
    """A command from a `server_args=` line: its model, address, parallelism and speculative settings."""
    if not fields.get("model_path"):
        return None
    argv = ["python3", "-m", "sglang.launch_server"]
    for name in _REBUILT:
        value = fields.get(name)
        if value in (None, False, "") or _DEFAULTS.get(name) == value:
            continue
        if name == "served_model_name" and value == fields.get("model_path"):
            continue
        if name == "tokenizer_path" and value == fields.get("model_path"):
            continue
        flag = "--" + name.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv


async def from_log(host: Any, log: str, *, pid: int | None) -> Any:
    from spectui.core.log import parse_server_args
    from spectui.sources.discover import program_of

    try:
        data = await host.read_range(log, 0, HEAD_BYTES)
    except Exception:  # noqa: BLE001 - no such log (or unreadable): nothing known from it
        return None
    text = data.decode("utf-8", errors="replace")
    cmd = launch_in_log(text)
    if cmd is not None:
        argv = list(cmd.argv)
        source = f"the launch line in {log}"
        own = dict(cmd.env)
    else:
        fields = next((f for f in (parse_server_args(line.split("server_args=", 1)[1])
                                   for line in text.splitlines() if "server_args=" in line) if f), None)
        argv = rebuilt_from_server_args(fields) if fields else None
        if argv is None:
            return None
        source = (f"the server_args= line of {log} (rebuilt: model, address, parallelism and speculative "
                  "flags; any other flag of the old command is not known)")
        own = {}
    env = {**await login_env(host), **own}
    note = ("environment not known (the server is gone and the log does not hold it): the new server gets this "
            "login's environment" + (f" and the launch line's {', '.join(own)}" if own else "")
            + f"; working directory: {os.path.dirname(log) or '/'}")
    port, addr = _port_addr(argv)
    uid, user, owner_note = await log_owner(host, log)
    return KnownCommand(tuple(argv), env, os.path.dirname(log) or "/", log, port, addr, pid,
                        program_of(argv) or "", source=source, env_note=note + owner_note, uid=uid, user=user)


async def find_known(host: Any, *, pid: int | None = None, log: str | None = None,
                     history: HistoryStore | None = None) -> Any:
    """The KnownCommand of the server that had `pid` / wrote `log` (or ran last on this host), or None."""
    store = history or HistoryStore()
    known = await from_history(host, store, pid=pid, log=log)
    if known is None and log:
        known = await from_log(host, log, pid=pid)
    return known


async def known_from_session(host: Any, *, server: Any, launch: Any, pid: int | None, log: str | None,
                             history: HistoryStore | None = None) -> KnownCommand | None:
    """What a cockpit knows of the server it follows (to start it again once it is gone): the discovered
    process itself when it is the one followed; else a relaunch's history record; else the launch command
    it shows, with the first server's environment (or this login's) and its own variables."""
    from spectui.sources.discover import program_of

    if server is not None and server.pid == pid:
        return known_of(server, source=f"pid {pid} as discovered while it ran")
    found = await from_history(host, history or HistoryStore(), pid=pid, log=None) if pid is not None else None
    if found is not None or launch is None:
        return found
    argv = list(launch.argv)
    uid, user = (server.uid, server.user) if server is not None else (None, "")
    if server is not None:
        env, cwd = dict(server.env), server.cwd
        note = f"environment: that of pid {server.pid} (the first server this cockpit followed), with the launch's own"
    else:
        env = await login_env(host)
        cwd = os.getcwd() if getattr(host, "name", "") == "local" else (os.path.dirname(log or "") or "/")
        note = ("environment not known exactly: this login's, with the launch's own variables"
                + (f" ({', '.join(k for k, _ in launch.env)})" if launch.env else ""))
    env.update(dict(launch.env))
    if uid is None:
        uid, user, owner_note = await log_owner(host, log)
        note += owner_note
    port, addr = _port_addr(argv)
    return KnownCommand(tuple(argv), env, cwd, log, port, addr, pid, program_of(argv) or "",
                        source="the launch command this cockpit shows", env_note=note, uid=uid, user=user)
