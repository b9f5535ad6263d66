"""What the relaunch screen edits and shows: fields <-> LaunchCommand, live diff + resolver verdict, ops call.

The environment line holds the launch's variables as NAME=VALUE words: the launch command's own
assignments and, of the discovered server's environment, the variables that steer SGLang (SGLANG_*,
NCCL_*, CUDA_*, …, and the simulator's SPECTUI_SIM_* knobs). Secret-looking values are shown masked and
kept as they were unless edited; removing a word unsets the variable; every variable not shown is carried
over unchanged (relaunch starts the new server with the old one's environment, edited).

Pure except `run_ops_relaunch`, which hands the edits to ops.relaunch.run (prepare + execute) so the TUI
relaunches exactly like `spectui relaunch` does (same plan, same safety checks, same history record).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from spectui.core.secrets import scrub  # noqa: F401 - core's (values and shapes masked), for relaunch_outcome


@dataclass(frozen=True, slots=True)
class SpecField:
    dest: str
    flag: str
    label: str


SPEC_FIELDS: tuple[SpecField, ...] = (
    SpecField("speculative_algorithm", "--speculative-algorithm", "algorithm"),
    SpecField("speculative_draft_model_path", "--speculative-draft-model-path", "draft model"),
    SpecField("speculative_num_steps", "--speculative-num-steps", "num steps"),
    SpecField("speculative_eagle_topk", "--speculative-eagle-topk", "eagle topk"),
    SpecField("speculative_num_draft_tokens", "--speculative-num-draft-tokens", "draft tokens"),
)
_BY_FLAG = {f.flag: f for f in SPEC_FIELDS}
# Variables of the server's environment shown on the environment line (the rest is carried over unseen).
LAUNCH_ENV_PREFIXES = ("SGLANG_", "SGL_", "NCCL_", "CUDA_", "SPECTUI_SIM_", "HF_", "TORCH_", "PYTORCH_",
                       "TRITON_", "FLASHINFER_")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Draft:
    """The screen's state: one text per speculative field ("" = not set) and the other args as a line."""

    values: Mapping[str, str]
    other: str
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    env: str = ""  # the environment line: NAME=VALUE words, secret values masked
    env_base: Mapping[str, str] = field(default_factory=dict)  # the shown variables' real values
    other_secrets: Mapping[str, str] = field(default_factory=dict)  # masked flag (--api-key) -> real value

    def with_fix(self, fix: Any) -> Draft:
        """Apply a core.rules.Fix: speculative flags go to their fields, anything else to the raw line."""
        values = dict(self.values)
        other = self.other
        for flag, value in dict(fix.set).items():
            flag = "--" + flag.lstrip("-")
            if flag in _BY_FLAG:
                values[_BY_FLAG[flag].dest] = str(value)
            else:
                other = _edit_other(other, flag, str(value) if value not in (None, "") else None)
        for flag in fix.unset:
            flag = "--" + flag.lstrip("-")
            if flag in _BY_FLAG:
                values[_BY_FLAG[flag].dest] = ""
            else:
                other = _edit_other(other, flag, None, unset=True)
        return dataclasses.replace(self, values=values, other=other)


def _edit_other(other: str, flag: str, value: str | None, *, unset: bool = False) -> str:
    from spectui.core.launch import LaunchCommand, set_flag, unset_flag

    try:
        cmd = LaunchCommand(env=(), program=("sglang",), args=tuple(shlex.split(other)))
    except ValueError:
        return other
    cmd = unset_flag(cmd, flag) if unset else set_flag(cmd, flag, value)
    return shlex.join(cmd.args)


def launch_env(cmd: Any, server_env: Mapping[str, str] | None) -> dict[str, str]:
    """The variables the environment line shows: the server's launch-steering ones, then the command's own."""
    env = {k: v for k, v in (server_env or {}).items() if k.startswith(LAUNCH_ENV_PREFIXES)}
    env.update(dict(getattr(cmd, "env", ()) or ()))
    return env


def env_line(env: Mapping[str, str]) -> str:
    from spectui.core.secrets import redact_env

    return " ".join(f"{k}={v if v == '***' else shlex.quote(v)}" for k, v in redact_env(env).items())


def parse_env_line(line: str, base: Mapping[str, str]) -> dict[str, str]:
    """The edited environment line as variables; a masked value left as shown keeps its real value.
    Raises ValueError (one line) for words that are not NAME=VALUE or quotes shlex cannot split."""
    from spectui.core.secrets import redact_env

    shown = redact_env(base)
    out: dict[str, str] = {}
    for word in shlex.split(line):
        name, eq, value = word.partition("=")
        if not eq or not _ENV_NAME.fullmatch(name):
            raise ValueError(f"{word!r} is not NAME=VALUE")
        if name in base and value == shown[name] != base[name]:
            value = base[name]  # still masked: unchanged
        out[name] = value
    return out


def split_command(cmd: Any, version: str | None, server_env: Mapping[str, str] | None = None) -> Draft:
    """The running command as fields (speculative flags) + the rest of its args as one shell line, and
    its environment line (`server_env`: the discovered server's environment, when known)."""
    choices: dict[str, tuple[str, ...]] = {}
    try:
        from spectui.core.launch import load_catalogue, pick_version

        cat = load_catalogue(pick_version(version)[0])
        spec = cat.by_dest.get("speculative_algorithm")
        if spec is not None and spec.choices:
            choices["speculative_algorithm"] = tuple(str(c) for c in spec.choices)
    except Exception:  # noqa: BLE001 - choices are a convenience; the field still takes text
        pass
    base = launch_env(cmd, server_env)
    if cmd is None:
        return Draft({f.dest: "" for f in SPEC_FIELDS}, "", choices, env_line(base), base)
    from spectui.core.launch import flag_value, unset_flag

    values = {f.dest: flag_value(cmd.args, f.flag) or "" for f in SPEC_FIELDS}
    rest = cmd
    for f in SPEC_FIELDS:
        rest = unset_flag(rest, f.flag)
    from spectui.core.secrets import mask_argv

    line, secrets = mask_argv(rest.args)  # masked as the CLI and the history show it; values put back
    return Draft(values, line, choices, env_line(base), base, secrets)


def draft_secrets(draft: Draft) -> list[str]:
    """Every secret value the screen knows (flags and environment): never to be shown."""
    from spectui.core.secrets import redact_env

    env = [v for k, v in draft.env_base.items() if v and redact_env({k: v})[k] != v]
    return [v for v in (*draft.other_secrets.values(), *env) if len(v) >= 3]


@dataclass(frozen=True)
class Evaluation:
    text: Text
    launchable: bool
    command: Any = None  # core.launch.LaunchCommand
    changes: tuple[Any, ...] = ()
    resolution: Any = None


def build_command(original: Any, draft: Draft) -> Any:
    """The edited LaunchCommand, its `env` the edited environment line. Raises ValueError for a line
    shlex cannot split ("other flags: …" / "environment: …")."""
    from spectui.core.launch import LaunchCommand, set_flag
    from spectui.core.secrets import unmask_argv

    try:
        args = tuple(unmask_argv(shlex.split(draft.other), draft.other_secrets))
    except ValueError as exc:
        raise ValueError(f"other flags: cannot split this line ({exc}); check the quotes") from None
    try:
        env = parse_env_line(draft.env, draft.env_base)
    except ValueError as exc:
        raise ValueError(f"environment: {exc}; write NAME=VALUE words") from None
    base = original if original is not None else LaunchCommand(
        env=(), program=("python", "-m", "sglang.launch_server"), args=())
    cmd = dataclasses.replace(base, args=args, env=tuple(env.items()))
    for f in SPEC_FIELDS:
        value = draft.values.get(f.dest, "").strip()
        if value:
            cmd = set_flag(cmd, f.flag, value)
    return cmd


def evaluate(original: Any, draft: Draft, version: str | None, *, host_judged: Any = None,
             host_pending: bool = False) -> Evaluation:
    """Diff against the running command and what SGLang `version` would do with the edited one.
    `host_judged`: the host's own SGLang's Resolution of the edited command (a source build: ops.relaunch.hostjudge),
    which replaces the replayed release rules; `host_pending`: it is being asked (no verdict yet)."""
    from spectui.core.launch import diff, pick_version, resolvable_args, resolve
    from spectui.core.secrets import display_argv, masked_flag_value

    t = Text()
    try:
        cmd = build_command(original, draft)
    except ValueError as exc:
        t.append(f"{exc}\n", "bold red")
        return Evaluation(t, False)
    changes = tuple(diff(original, cmd)) if original is not None else ()
    env_changes = env_diff(draft.env_base, dict(cmd.env))
    t.append("changes\n", "bold underline")
    if not changes and not env_changes:
        t.append("  none (a plain restart)\n", "dim")
    rows = [(c.flag, _show(masked_flag_value(c.flag, c.old)), _show(masked_flag_value(c.flag, c.new)))
            for c in changes]
    rows += [(f"env {name}", _show_env(name, old), _show_env(name, new)) for name, old, new in env_changes]
    for name, before, after in rows:
        t.append(f"  {name}  ", "bold")
        t.append(before, "red")
        t.append(" → ")
        t.append(after + "\n", "green")
    ver, note = pick_version(version)
    res = resolve(list(resolvable_args(cmd)), ver, env=dict(cmd.env))
    t.append("verdict ", "bold underline")
    if host_pending:  # a source build: its own SGLang judges, and has not answered yet
        t.append(f" (SGLang {version}: a source build, judged by the host's own SGLang)\n", "dim")
        t.append("  … asking the host's own SGLang what it makes of this command\n", "bold")
        t.append("command  ", "bold")
        t.append(display_argv(cmd.argv) + "\n", "dim")
        return Evaluation(t, False, cmd, changes, None)
    if isinstance(host_judged, str):  # the host could not say: the replayed rules, and why
        note = f"{note + '; ' if note else ''}the host's own SGLang could not resolve ({host_judged})"
    elif host_judged is not None:
        res = host_judged
        ver, note = str(version), res.catalogue.why if res.catalogue else "judged by the host's own SGLang"
    t.append(f" (SGLang {ver}{'; ' + note if note else ''})\n", "dim")
    if res.verdict == "overridden":  # never "ok": SGLang starts with other values than the ones asked
        t.append("  ⚠ overridden: SGLang would start, but not with what you asked\n", "bold yellow")
        for o in res.overrides:
            t.append(f"    {o.sentence()}\n", "yellow")
            if o.fix:
                t.append(f"      to get what you asked: {o.fix}\n")
    elif res.verdict == "startup_error":
        t.append(f"  ✗ SGLang would fail at start-up: {res.startup_failure}\n", "bold red")
    elif res.outcome == "ok":
        t.append("  ✓ SGLang would start with these flags\n", "bold green")
    elif res.outcome == "argparse_error":
        t.append(f"  ✗ SGLang would refuse to start: error: {res.argparse_error}\n", "bold red")
    else:
        err = res.error
        t.append(f"  ✗ SGLang would crash while resolving: {getattr(err, 'type', 'error')}: "
                 f"{getattr(err, 'message', '')}\n", "bold red")
        if explanation := getattr(err, "explanation", ""):
            t.append(f"    {explanation}\n", "red")
    if res.effective:
        t.append("effective  ", "bold")
        parts = []
        for f in SPEC_FIELDS[2:]:
            eff = res.effective.get(f.dest)
            req = res.requested.get(f.dest)
            mark = f" (asked {req})" if req is not None and str(req) != str(eff) else ""
            parts.append((f"{f.label} {eff}{mark}", "bold yellow" if mark else ""))
        for i, (part, style) in enumerate(parts):
            t.append((", " if i else "") + part, style)
        t.append("\n")
    for w in res.warnings:
        t.append("  warning: ", "yellow")
        t.append(f"{w}\n")
    t.append("command  ", "bold")
    t.append(display_argv(cmd.argv) + "\n", "dim")  # secrets masked as the CLI and the history show them
    return Evaluation(t, res.outcome == "ok", cmd, changes, res)


def _show(value: str | None) -> str:
    if value is None:
        return "(absent)"
    return value if value != "" else "(on)"


def _show_env(name: str, value: str | None) -> str:
    from spectui.core.secrets import redact_env

    if value is None:
        return "(absent)"
    shown = redact_env({name: value})[name]
    return shown if shown and shown.isprintable() else repr(shown)


def env_diff(base: Mapping[str, str], new: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
    """(name, old, new) for every variable the environment line changed, in line order."""
    out = [(k, base[k], new.get(k)) for k in base if base[k] != new.get(k)]
    return out + [(k, None, v) for k, v in new.items() if k not in base]


def edits_from(original: Any, command: Any, env_base: Mapping[str, str] | None = None) -> Any:
    """ops.relaunch.plan.Edits that turn `original` into `command` (flags without dashes, as ops wants), and the
    environment `env_base` (what the line showed; default: the original command's own) into `command.env`."""
    from spectui.core.launch import diff
    from spectui.ops.relaunch.plan import Edits

    sets: list[tuple[str, str | None]] = []
    unsets: list[str] = []
    for c in diff(original, command):
        name = c.flag.lstrip("-")
        if c.new is None:
            unsets.append(name)
        else:
            sets.append((name, c.new if c.new != "" else None))
    base = dict(original.env) if env_base is None else env_base
    changed = env_diff(base, dict(command.env))
    env_sets = tuple((k, v) for k, _, v in changed if v is not None)
    env_unsets = tuple(k for k, _, v in changed if v is None)
    return Edits(tuple(sets), tuple(unsets), env_sets, env_unsets)


def result_log(result: Any) -> str | None:
    """The log the dashboard should follow after a relaunch: the new one, or the rollback's."""
    if getattr(result, "healthy", False):
        return result.new.log
    rollback = getattr(result, "rollback", None)
    if rollback is not None and rollback.healthy:
        return rollback.log
    return None


async def run_ops_relaunch(session: Any, command: Any, *, progress: Callable[[str, str], None],
                           env_base: Mapping[str, str] | None = None) -> Any:
    """prepare + execute through ops.relaunch.run; progress(step, message) for every step. `env_base`: the
    environment the screen showed (its edits become --set-env / --unset-env)."""
    if session.relaunch is not None:
        return await session.relaunch(command, progress)
    if getattr(session, "group", None) is not None:  # every node of a multi-node / PD server, together
        from spectui.ui.grouptarget import run_group_relaunch

        return await run_group_relaunch(session, edits_from(session.launch, command, env_base), progress=progress)
    from spectui.ops.relaunch.known import known_from_session
    from spectui.ops.relaunch.run import execute, prepare_any

    edits = edits_from(session.launch, command, env_base)
    progress("checking", f"planning the relaunch of pid {session.pid}")
    # a server that is gone (kill -9, a crash) is started again from what the cockpit knows of it
    known = await known_from_session(session.host, server=session.server, launch=session.launch, pid=session.pid,
                                     log=session.log_path)
    plan = await prepare_any(session.host, edits, pid=session.pid, known=known, server_version=session.sglang_version)
    if plan.from_known:
        progress("checking", f"pid {session.pid} is gone: starting its last known command ({plan.known_note})")
    return await execute(session.host, plan,
                         on_progress=lambda p: progress(str(p.step.value), ("rollback: " if p.rollback else "")
                                                        + p.message))
