"""Relaunch plan: the current server, the edited command and environment, their diff and pre-flight
verdict, the new log path and the exact host commands — everything shown before anything on the host changes.

The new server gets the old one's environment exactly (/proc/PID/environ), with the `--set-env` /
`--unset-env` edits applied (SGLANG_*, NCCL_*, or the simulator's SPECTUI_SIM_* knobs); a rollback
restarts the old command with the old environment, unedited."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spectui.core.launch import (
    CataloguePick,
    FlagCatalogue,
    FlagChange,
    LaunchCommand,
    Resolution,
    diff,
    parse_command,
    pick_version,
    resolvable_args,
    resolve,
    set_flag,
    unset_flag,
)
from spectui.core.secrets import masked_flag_value, secret_values
from spectui.core.secrets import scrub as scrub_values
from spectui.errors import CommandParseError, UsageError
from spectui.ops import hostcmds
from spectui.ops.history import masked_diff
from spectui.ops.hostcmds import redact_env
from spectui.sources.base import ServerProcess

_STAMPED = re.compile(r"-\d{8}-\d{6}(?:-\d+)?$")  # a suffix this module added on an earlier relaunch
DEFAULT_PORT = 30000
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class EnvChange:
    name: str
    old: str | None  # None: absent
    new: str | None


@dataclass(frozen=True, slots=True)
class Edits:
    """`--set FLAG=VALUE` (value None: a store_true flag) and `--unset FLAG`, flags without dashes;
    `--set-env NAME=VALUE` and `--unset-env NAME` for the server's environment. `argv`: start exactly this
    command line instead of the running one (a restore: the flags come back in their own order); the flag
    edits, if any, then apply to it."""

    sets: tuple[tuple[str, str | None], ...] = ()
    unsets: tuple[str, ...] = ()
    env_sets: tuple[tuple[str, str], ...] = ()
    env_unsets: tuple[str, ...] = ()
    argv: tuple[str, ...] | None = None

    @classmethod
    def from_cli(cls, sets: Sequence[str] = (), unsets: Sequence[str] = (), env_sets: Sequence[str] = (),
                 env_unsets: Sequence[str] = ()) -> Edits:
        parsed: list[tuple[str, str | None]] = []
        for item in sets:
            flag, eq, value = item.partition("=")
            flag = flag.strip().lstrip("-")
            if not flag:
                raise UsageError(f"--set {item!r}: write it as FLAG=VALUE, e.g. --set speculative-num-steps=15")
            parsed.append((flag, value if eq else None))
        cleaned = []
        for flag in unsets:
            name = flag.strip().lstrip("-")
            if not name or "=" in name:
                raise UsageError(f"--unset {flag!r}: give a flag name, e.g. --unset speculative-num-draft-tokens")
            cleaned.append(name)
        env_parsed: list[tuple[str, str]] = []
        for item in env_sets:
            name, eq, value = item.partition("=")
            if not eq or not _ENV_NAME.fullmatch(name):
                raise UsageError(f"--set-env {item!r}: write it as NAME=VALUE, e.g. --set-env NCCL_DEBUG=INFO")
            env_parsed.append((name, value))
        for name in env_unsets:
            if not _ENV_NAME.fullmatch(name):
                raise UsageError(f"--unset-env {name!r}: give a variable name, e.g. --unset-env NCCL_DEBUG")
        return cls(tuple(parsed), tuple(cleaned), tuple(env_parsed), tuple(env_unsets))


@dataclass(frozen=True, slots=True)
class RelaunchPlan:
    host_name: str
    server: ServerProcess
    old: LaunchCommand
    new: LaunchCommand
    changes: tuple[FlagChange, ...]
    version: str  # bundled SGLang version the verdict was computed with
    version_note: str  # which version and why ("server reports 0.5.6" / "server version unknown")
    resolution: Resolution
    effective_changes: tuple[tuple[str, object, object], ...]  # (dest, old effective, new effective)
    log_path: str
    port: int  # the port the new server will listen on (health is probed there)
    new_env: Mapping[str, str]  # the server's environment with the env edits: what the new command gets
    env_changes: tuple[EnvChange, ...] = ()
    catalogue: CataloguePick | None = None  # which flag catalogue judged the command (host's own / bundled)
    from_known: bool = False  # no server runs: `server` is the last one (gone), started again without a stop
    known_note: str = ""  # from_known: where the command is known from and how much of its environment

    @property
    def needs_force(self) -> bool:
        return self.resolution.verdict not in ("ok", "overridden")  # an override starts, and is shown

    @property
    def verdict_line(self) -> str:
        res = self.resolution
        if res.verdict == "overridden":  # never "ok": SGLang starts, with other values than asked
            return self.scrub("overridden: " + "; ".join(o.sentence() for o in res.overrides))
        if res.verdict == "startup_error":
            return self.scrub(f"SGLang would fail at start-up: {res.startup_failure}")
        if res.outcome == "ok":
            return "ok"
        if res.outcome == "argparse_error":  # argparse echoes the args it refused: secret values masked
            return self.scrub(f"SGLang would refuse to start: error: {res.argparse_error}")
        err = res.error
        line = f"SGLang would crash while resolving: {getattr(err, 'type', 'error')}: {getattr(err, 'message', '')}"
        return self.scrub(line.rstrip(": "))

    def scrub(self, text: str) -> str:
        """`text` with the old and new commands' secret values (`--api-key`'s …) and any secret shape masked."""
        return scrub_values(text, [*secret_values(self.old.argv), *secret_values(self.new.argv)])

    def start_argv(self) -> list[str]:
        return hostcmds.start_argv(self.server.cwd, self.log_path, dict(self.new_env), self.new.argv)

    def host_commands(self, *, own_pgids: Sequence[int] = ()) -> list[tuple[str, list[str]]]:
        """(why, argv) for every command relaunch runs on the host, in order."""
        pid, pgid = self.server.pid, self.server.pgid
        if self.from_known:  # nothing runs: no stop, only the checks that the start will not collide
            return [
                (f"check pid {pid} no longer runs the server" if pid > 1 else "", hostcmds.cmdline_argv(pid)
                 if pid > 1 else []),
                (f"poll until port {self.port} is free", hostcmds.listeners_argv()),
                ("poll until the last server's GPU memory is released (where nvidia-smi exists)",
                 hostcmds.gpu_apps_argv()),
                ("start the known command detached", self.start_argv()),
                (f"wait for health: GET /health on port {self.port}, follow {self.log_path}", []),
            ]
        try:
            term = hostcmds.signal_group_argv(pgid, "TERM", own_pgids=own_pgids)
            kill = hostcmds.signal_group_argv(pgid, "KILL", own_pgids=own_pgids)
            probe = hostcmds.signal_group_argv(pgid, "0", own_pgids=own_pgids)
        except ValueError as exc:
            return [(f"REFUSED: {exc}", [])]
        return [
            (f"check pid {pid} is still the server", hostcmds.cmdline_argv(pid)),
            ("check the process group holds only the server (and that it may be signalled)", hostcmds.ps_argv()),
            ("", probe),
            (f"stop: SIGTERM to process group {pgid}", term),
            ("poll until the group has exited", hostcmds.ps_argv()),
            ("only if still alive after the grace period: SIGKILL the group", kill),
            (f"poll until port {self.server.port or self.port} is free", hostcmds.listeners_argv()),
            ("poll until its GPU memory is released (where nvidia-smi exists)", hostcmds.gpu_apps_argv()),
            ("start the new command detached", self.start_argv()),
            (f"wait for health: GET /health on port {self.port}, follow {self.log_path}", []),
        ]

    def render(self, *, own_pgids: Sequence[int] = ()) -> str:
        """The plan as plain text (log-derived values are printed as data, never as markup)."""
        s = self.server
        where = (f"none running on {self.host_name} (the last was pid {s.pid}): the known command is started"
                 if self.from_known else f"pid {s.pid} (process group {s.pgid}) on {self.host_name}")
        out = [
            f"server   {where}, port {s.port}, cwd {s.cwd}",
            *([f"owner    {s.user or '(no name)'} (uid {s.uid})"] if s.uid is not None else []),
            *([f"known    {self.known_note}"] if self.from_known and self.known_note else []),
            f"log      {s.log_path or '(unknown)'}  ->  {self.log_path} (new file)",
            f"command  {hostcmds.display_argv(self.new.argv)}",
            "changes" if self.changes or self.env_changes else "changes  none (a plain restart)",
        ]
        rows = [(c.flag, _show(masked_flag_value(c.flag, c.old)), _show(masked_flag_value(c.flag, c.new)))
                for c in self.changes]
        rows += [(f"env {e.name}", *_show_env(e)) for e in self.env_changes]
        width = max((len(r[0]) for r in rows), default=0)
        for name, before, after in rows:
            out.append(f"  {name:<{width}}  {before} -> {after}")
        out.append(f"verdict  {self.verdict_line}  [SGLang {self.version}: {self.version_note}]")
        for o in self.resolution.overrides:
            out.append(f"  fix for {o.label or o.flag}: {o.fix}" if o.fix else f"  {o.label or o.flag}: no fix known")
        for dest, was, now in self.effective_changes:
            out.append(f"  effective {dest}: {json.dumps(was)} -> {json.dumps(now)}")
        for w in self.resolution.warnings:
            out.append(f"  warning: {self.scrub(w)}")
        out.append("host commands")
        start = self.start_argv()
        for why, argv in self.host_commands(own_pgids=own_pgids):
            if why:
                out.append(f"  # {why}")
            if argv == start:  # the environment is on its standard input, never on a command line
                edited = ", edited as above" if self.env_changes else ""
                dropped = hostcmds.unpassable(self.new_env)
                out.append(f"  # (the server's environment: {len(self.new_env) - len(dropped)} variables from "
                           f"/proc/{s.pid}/environ{edited}, on standard input into a 0600 file the server's "
                           "loader removes)" + (f"; not passed on (no shell can set them): {', '.join(dropped)}"
                                                if dropped else ""))
            if argv:
                out.append(f"  $ {hostcmds.display_argv(argv, self.new_env)}")
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host_name,
            "old_pid": self.server.pid,
            "owner": None if self.server.uid is None else {"user": self.server.user, "uid": self.server.uid},
            "from_known": self.from_known,
            "known_note": self.known_note,
            "old_command": hostcmds.display_argv(self.old.argv),
            "command": hostcmds.display_argv(self.new.argv),
            "log": self.log_path,
            "diff": masked_diff(self.changes),  # --api-key's (and every secret flag's) value masked
            "env_diff": [dict(zip(("name", "old", "new"), (e.name, *_masked(e)), strict=True))
                         for e in self.env_changes],
            "sglang_version": self.version,
            "version_note": self.version_note,
            "catalogue": self.catalogue.to_json() if self.catalogue is not None else None,
            "verdict": self.resolution.verdict,
            "verdict_detail": self.verdict_line,
            "overrides": [{k: o.to_json()[k] for k in ("flag", "asked", "effective", "why", "fix")}
                          for o in self.resolution.overrides],
            "warnings": [self.scrub(w) for w in self.resolution.warnings],
            "host_commands": [hostcmds.display_argv(a, self.new_env) for _, a in self.host_commands() if a],
        }


def _show(value: str | None) -> str:
    return "(absent)" if value is None else (value or "(set)")


def _masked(e: EnvChange) -> tuple[str | None, str | None]:
    """The old and new values for display: secret-looking variables (HF_TOKEN …) masked."""
    return tuple(None if v is None else redact_env({e.name: v})[e.name] for v in (e.old, e.new))  # type: ignore[return-value]


def _show_env(e: EnvChange) -> tuple[str, str]:
    def one(v: str | None) -> str:  # a value from /proc is data: control characters shown escaped
        return "(absent)" if v is None else (v if v and v.isprintable() else repr(v))
    old, new = _masked(e)
    return one(old), one(new)


def apply_env_edits(env: Mapping[str, str], edits: Edits) -> tuple[dict[str, str], tuple[EnvChange, ...]]:
    """The environment with `--unset-env` then `--set-env` applied (order kept, new names last), and the
    changes. Unsetting a variable the server does not have is a usage error, like `--unset`."""
    new = dict(env)
    for name in edits.env_unsets:
        if name not in new:
            raise UsageError(f"--unset-env {name}: the server's environment has no {name}; nothing to remove")
        del new[name]
    for name, value in edits.env_sets:
        new[name] = value
    changes = [EnvChange(k, env[k], new.get(k)) for k in env if env[k] != new.get(k)]
    changes += [EnvChange(k, None, v) for k, v in new.items() if k not in env]
    return new, tuple(changes)


def apply_edits(cmd: LaunchCommand, edits: Edits) -> LaunchCommand:
    new = cmd if edits.argv is None else parse_command(list(edits.argv))
    for flag in edits.unsets:
        edited = unset_flag(new, flag)
        if edited == new:
            raise UsageError(f"--unset {flag}: the current command has no --{flag}; nothing to remove")
        new = edited
    for flag, value in edits.sets:
        new = set_flag(new, flag, value)
    return new


def new_log_path(old_log: str | None, cwd: str, now: datetime, taken: Sequence[str] = ()) -> str:
    """`<name>-YYYYmmdd-HHMMSS.log` beside the old log (or in cwd). `taken` paths are skipped."""
    if old_log:
        folder, base = posixpath.split(old_log)
        stem = base[:-4] if base.endswith(".log") else base
        stem = _STAMPED.sub("", stem) or "sglang"
    else:
        folder, stem = cwd, "sglang"
    stamp = now.strftime("%Y%m%d-%H%M%S")
    path = posixpath.join(folder or cwd, f"{stem}-{stamp}.log")
    n = 1
    while path in taken or path == old_log:
        path = posixpath.join(folder or cwd, f"{stem}-{stamp}-{n}.log")
        n += 1
    return path


def port_of(cmd: LaunchCommand, default: int | None) -> int:
    port: int | None = default
    args = list(cmd.args)
    for i, arg in enumerate(args):
        if arg == "--port" and i + 1 < len(args) and args[i + 1].isdigit():
            port = int(args[i + 1])
        elif arg.startswith("--port=") and arg[7:].isdigit():
            port = int(arg[7:])
    return port or DEFAULT_PORT


def build_plan(
    server: ServerProcess,
    edits: Edits,
    *,
    host_name: str,
    now: datetime,
    server_version: str | None = None,
    taken_logs: Sequence[str] = (),
    model_arch: str | None = None,
    draft_arch: str | None = None,
    catalogue: tuple[FlagCatalogue, CataloguePick] | None = None,
) -> RelaunchPlan:
    """Everything relaunch will do, computed without touching the host. `catalogue`: the flags to judge
    with, from sources.hostflags_run (the host's own SGLang for a release spectui does not ship); None:
    the bundled pick for `server_version`."""
    try:
        old = parse_command(list(server.argv))
    except CommandParseError as exc:
        raise UsageError(f"cannot read the server's command line (pid {server.pid}): {exc}") from None
    new = apply_edits(old, edits)
    version, fallback = pick_version(server_version) if catalogue is None else (catalogue[1].version, None)
    host_cat = catalogue[0] if catalogue is not None and catalogue[1].source == "host" else None
    pick = catalogue[1] if catalogue is not None else None
    if pick is not None and (pick.source == "host" or not pick.exact):
        note = f"the server reports {server_version}; {pick.why}" if server_version else pick.why
    elif server_version and not fallback:
        note = f"the server reports {server_version}"
    elif server_version:
        note = f"the server reports {server_version}; {fallback}"
    else:
        note = "server version unknown, newest bundled release used"
    new_env, env_changes = apply_env_edits(server.env, edits)
    kw: dict[str, Any] = {"model_arch": model_arch, "draft_arch": draft_arch}
    judged = _judged_version(server_version, host_cat.version) if host_cat is not None else version
    kw["host_catalogue"] = host_cat
    resolution = resolve(list(resolvable_args(new)), judged, entry=new.entry, env=new_env, **kw)
    before = resolve(list(resolvable_args(old)), judged, entry=old.entry, env=dict(server.env), **kw)
    eff_changes: list[tuple[str, object, object]] = []
    if resolution.effective is not None and before.effective is not None:
        for dest in sorted(set(before.effective) | set(resolution.effective)):
            a, b = before.effective.get(dest), resolution.effective.get(dest)
            if a != b:
                eff_changes.append((dest, a, b))
    log = new_log_path(server.log_path, server.cwd, now, taken_logs)
    return RelaunchPlan(
        host_name=host_name, server=server, old=old, new=new, changes=tuple(diff(old, new)),
        version=version, version_note=note, resolution=resolution, effective_changes=tuple(eff_changes),
        log_path=log, port=port_of(new, server.port), new_env=new_env, env_changes=env_changes,
        catalogue=pick or resolution.catalogue,
    )


def _judged_version(server_version: str | None, host_version: str) -> str:
    """The release the host's catalogue judges as: what the server reports, else what the dump said."""
    from spectui.core.versions import parse_version

    for candidate in (server_version, host_version):
        try:
            if candidate:
                parse_version(candidate.strip().removeprefix("v"))
                return candidate
        except ValueError:
            continue
    return pick_version(None)[0]
