"""What the relaunch screen edits and shows: fields <-> LaunchCommand, live diff + resolver verdict, ops call.

Pure except `run_ops_relaunch`, which hands the edits to ops.relaunch (prepare + execute) so the TUI
relaunches exactly like `spectui relaunch` does (same plan, same safety checks, same history record).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text


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


@dataclass(frozen=True)
class Draft:
    """The screen's state: one text per speculative field ("" = not set) and the other args as a line."""

    values: Mapping[str, str]
    other: str
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

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
    from spectui.core.launch.command import LaunchCommand, set_flag, unset_flag

    try:
        cmd = LaunchCommand(env=(), program=("sglang",), args=tuple(shlex.split(other)))
    except ValueError:
        return other
    cmd = unset_flag(cmd, flag) if unset else set_flag(cmd, flag, value)
    return shlex.join(cmd.args)


def _flag_value(args: tuple[str, ...], flag: str) -> str:
    value = ""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args) and not args[i + 1].startswith("--"):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def split_command(cmd: Any, version: str | None) -> Draft:
    """The running command as fields (speculative flags) + the rest of its args as one shell line."""
    choices: dict[str, tuple[str, ...]] = {}
    try:
        from spectui.core.launch.catalogue import load_catalogue, pick_version

        cat = load_catalogue(pick_version(version)[0])
        spec = cat.by_dest.get("speculative_algorithm")
        if spec is not None and spec.choices:
            choices["speculative_algorithm"] = tuple(str(c) for c in spec.choices)
    except Exception:  # noqa: BLE001 - choices are a convenience; the field still takes text
        pass
    if cmd is None:
        return Draft({f.dest: "" for f in SPEC_FIELDS}, "", choices)
    from spectui.core.launch.command import unset_flag

    values = {f.dest: _flag_value(cmd.args, f.flag) for f in SPEC_FIELDS}
    rest = cmd
    for f in SPEC_FIELDS:
        rest = unset_flag(rest, f.flag)
    # The simulator's --sim-* knobs stay in `args`, in order: they are edited on the same line.
    return Draft(values, shlex.join(rest.args), choices)


@dataclass(frozen=True)
class Evaluation:
    text: Text
    launchable: bool
    command: Any = None  # core.launch.LaunchCommand
    changes: tuple[Any, ...] = ()
    resolution: Any = None


def build_command(original: Any, draft: Draft) -> Any:
    """The edited LaunchCommand. Raises ValueError for a raw line shlex cannot split."""
    from spectui.core.launch.command import LaunchCommand, set_flag

    args = tuple(shlex.split(draft.other))
    base = original if original is not None else LaunchCommand(
        env=(), program=("python", "-m", "sglang.launch_server"), args=())
    # The simulator's --sim-* knobs stay in args (core.launch's `sglang_args` leaves them out).
    cmd = dataclasses.replace(base, args=args)
    for f in SPEC_FIELDS:
        value = draft.values.get(f.dest, "").strip()
        if value:
            cmd = set_flag(cmd, f.flag, value)
    return cmd


def evaluate(original: Any, draft: Draft, version: str | None) -> Evaluation:
    """Diff against the running command and what SGLang `version` would do with the edited one."""
    from spectui.core.launch.catalogue import pick_version
    from spectui.core.launch.command import diff
    from spectui.core.launch.resolve import resolve
    from spectui.ops.plan import resolvable_args

    t = Text()
    try:
        cmd = build_command(original, draft)
    except ValueError as exc:
        t.append(f"other flags: cannot split this line ({exc}); check the quotes\n", "bold red")
        return Evaluation(t, False)
    changes = tuple(diff(original, cmd)) if original is not None else ()
    t.append("changes\n", "bold underline")
    if not changes:
        t.append("  none (a plain restart)\n", "dim")
    for c in changes:
        t.append(f"  {c.flag}  ", "bold")
        t.append(_show(c.old), "red")
        t.append(" → ")
        t.append(_show(c.new) + "\n", "green")
    ver, note = pick_version(version)
    res = resolve(list(resolvable_args(cmd)), ver)
    t.append("verdict ", "bold underline")
    t.append(f" (SGLang {ver}{'; ' + note if note else ''})\n", "dim")
    if res.outcome == "ok":
        t.append("  ✓ SGLang would start with these flags\n", "bold green")
    elif res.outcome == "argparse_error":
        t.append(f"  ✗ SGLang would refuse to start: error: {res.argparse_error}\n", "bold red")
    else:
        err = res.error
        t.append(f"  ✗ SGLang would crash while resolving: {getattr(err, 'type', 'error')}: "
                 f"{getattr(err, 'message', '')}\n", "bold red")
        if getattr(err, "explanation", ""):
            t.append(f"    {err.explanation}\n", "red")
    if res.effective:
        t.append("effective  ", "bold")
        parts = []
        for f in SPEC_FIELDS[2:]:
            eff = res.effective.get(f.dest)
            req = res.requested.get(f.dest)
            mark = f" (asked {req})" if req is not None and str(req) != str(eff) else ""
            parts.append((f"{f.label} {eff}{mark}", "bold red" if mark else ""))
        for i, (part, style) in enumerate(parts):
            t.append((", " if i else "") + part, style)
        t.append("\n")
    for w in res.warnings:
        t.append("  warning: ", "yellow")
        t.append(f"{w}\n")
    t.append("command  ", "bold")
    t.append(shlex.join(cmd.argv) + "\n", "dim")
    return Evaluation(t, res.outcome == "ok", cmd, changes, res)


def _show(value: str | None) -> str:
    if value is None:
        return "(absent)"
    return value if value != "" else "(on)"


def edits_from(original: Any, command: Any) -> Any:
    """ops.plan.Edits that turn `original` into `command` (flags without dashes, as ops wants)."""
    from spectui.core.launch.command import diff
    from spectui.ops.plan import Edits

    sets: list[tuple[str, str | None]] = []
    unsets: list[str] = []
    for c in diff(original, command):
        name = c.flag.lstrip("-")
        if c.new is None:
            unsets.append(name)
        else:
            sets.append((name, c.new if c.new != "" else None))
    return Edits(tuple(sets), tuple(unsets))


def result_log(result: Any) -> str | None:
    """The log the dashboard should follow after a relaunch: the new one, or the rollback's."""
    if getattr(result, "healthy", False):
        return result.new.log
    rollback = getattr(result, "rollback", None)
    if rollback is not None and rollback.healthy:
        return rollback.log
    return None


async def run_ops_relaunch(session: Any, command: Any, *, progress: Callable[[str, str], None]) -> Any:
    """prepare + execute through ops.relaunch; progress(step, message) for every step."""
    if session.relaunch is not None:
        return await session.relaunch(command, progress)
    from spectui.ops.relaunch import execute, prepare

    edits = edits_from(session.launch, command)
    progress("checking", f"planning the relaunch of pid {session.pid}")
    plan = await prepare(session.host, edits, pid=session.pid)
    return await execute(session.host, plan,
                         on_progress=lambda p: progress(str(p.step.value), ("rollback: " if p.rollback else "")
                                                        + p.message))
