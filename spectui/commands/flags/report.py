"""The report behind `spectui flags`: parse + resolve + target architecture, as JSON or a human view."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from spectui.core.launch import (
    SPEC_VIEW,
    CataloguePick,
    FlagCatalogue,
    FlagNote,
    LaunchCommand,
    Resolution,
    error_fix,
    load_catalogue,
    parse_pasted,
    pick_version,
    resolve,
)
from spectui.core.text import terminal_safe
from spectui.errors import CommandParseError


class FlagsInputError(Exception):
    """Bad input for `spectui flags` (exit 2)."""


@dataclass(frozen=True)
class FlagsReport:
    command: LaunchCommand
    resolution: Resolution
    version_note: str | None
    model_arch: str | None
    arch_source: str  # "--model-arch", "<path>/config.json", or why it is unknown
    skipped: tuple[tuple[str, str], ...] = ()  # (flag, placeholder value) left out of the resolution
    assumed: str | None = None  # what was assumed about a pasted command (flags alone: the program)

    def effective_view(self) -> dict[str, Any] | None:
        eff = self.resolution.effective
        if eff is None:
            return None
        keys = [*SPEC_VIEW, *(k for k in self.resolution.requested if k not in SPEC_VIEW)]
        return {k: eff.get(k) for k in keys}

    def to_json(self) -> dict[str, Any]:
        res = self.resolution
        err = None
        if res.error is not None:
            err = {"type": res.error.type, "message": res.error.message, "explanation": res.error.explanation,
                   "raised_at": res.error.raised_at}
        return {
            "sglang_version": res.version, "catalogue_version": res.catalogue_version,
            "catalogue": res.catalogue.to_json() if res.catalogue is not None else None,
            "program": " ".join(self.command.program), "env": dict(self.command.env),
            "requested": res.requested, "outcome": res.outcome, "verdict": res.verdict,
            "startup_failure": res.startup_failure,
            "overrides": [{k: o.to_json()[k] for k in ("flag", "asked", "effective", "why", "fix")}
                          for o in res.overrides],
            "argparse_error": res.argparse_error,
            "error": err, "effective": self.effective_view(), "warnings": res.warnings,
            "diagnoses": [_diagnosis(n) for n in self.diagnoses()],
            "model_arch": self.model_arch, "model_arch_source": self.arch_source,
            "placeholders": list(self.command.placeholders), "notes": self.notes(),
            "command": self.command.render(),
        }

    def notes(self) -> list[str]:
        out = [self.assumed] if self.assumed else []
        out += [self.version_note] if self.version_note else []
        out += [a for a in self.resolution.assumptions if a != self.version_note]
        if self.model_arch is None:
            out.append(f"target architecture unknown: {self.arch_source}; pass --model-arch ARCH (it decides "
                       "the auto-chosen steps/topk/draft tokens and whether the target carries its own MTP draft)")
        if self.command.placeholders:
            out.append(f"unexpanded placeholders left as text: {', '.join(self.command.placeholders)}")
        out += [f"{flag} {value}: value is a placeholder, so this flag was not checked" for flag, value in self.skipped]
        return out

    def diagnoses(self) -> list[FlagNote]:
        res = self.resolution
        notes = list(res.notes)
        if res.error is not None:
            fix_set, fix_unset = error_fix(res.error.type, res.error.message, res.requested)
            where = f" in {res.error.raised_at}" if res.error.raised_at else ""
            what = f"{res.error.type}: {res.error.message}" if res.error.message else f"bare {res.error.type}"
            notes.insert(0, FlagNote("startup-error", "error", f"SGLang {res.version} aborts: {what}{where}",
                                     res.error.explanation, tuple(fix_set.items()), tuple(fix_unset)))
        return notes


_CATEGORY = {
    "foreign-flag": "unrecognized-argument", "unrecognized-flag": "unrecognized-argument",
    "ambiguous-flag": "unrecognized-argument", "invalid-choice": "invalid-argument",
    "invalid-value": "invalid-argument", "missing-required": "invalid-argument",
    "startup-error": "invalid-argument", "draft-tokens-adjusted": "silent-override",
    "ngram-topk-overridden": "silent-override", "max-running-48": "capacity",
}


def _diagnosis(n: FlagNote) -> dict[str, Any]:
    fix = {"set": dict(n.fix_set), "unset": list(n.fix_unset)} if (n.fix_set or n.fix_unset) else None
    return {"rule": f"FLAGS-{n.code}", "category": _CATEGORY.get(n.code, "other"), "severity": n.severity,
            "title": n.title, "evidence": [], "fix": fix, "explanation": n.explanation}


def build_report(text: str | Sequence[str], *, version: str | None, model_arch: str | None,
                 device: str = "cuda", catalogue: tuple[FlagCatalogue, CataloguePick] | None = None
                 ) -> FlagsReport:
    """`catalogue`: the flags to judge with (sources.hostflags_run: a host's own SGLang, `flags --host`);
    None: the bundled pick for `version`."""
    try:
        cmd, assumed = parse_pasted(text)  # the flags alone: `python -m sglang.launch_server` assumed
    except CommandParseError as exc:
        raise FlagsInputError(str(exc)) from None
    try:
        picked, note = pick_version(version) if catalogue is None else (catalogue[1].version, None)
    except ValueError as exc:
        raise FlagsInputError(str(exc)) from None
    host_cat = catalogue[0] if catalogue is not None and catalogue[1].source == "host" else None
    if catalogue is not None and (host_cat is not None or not catalogue[1].exact):
        note = catalogue[1].why
    cat = host_cat or load_catalogue(picked)
    arch, source = (model_arch, "--model-arch") if model_arch else _arch_from_config(cmd, cat)
    args, skipped = _without_typed_placeholders(cmd, cat)
    judged = (version or cat.version) if host_cat is not None else (version or picked)
    if host_cat is not None and not _is_release(judged):
        judged = pick_version(None)[0]  # the dump named no release number: judged as the newest bundled
    res = resolve(args, judged, model_arch=arch, env=dict(cmd.env), device=device, entry=cmd.entry,
                  host_catalogue=host_cat)
    if catalogue is not None and res.catalogue is not None and catalogue[1].source == res.catalogue.source:
        res = replace(res, catalogue=catalogue[1])  # the host's reason (which host, which python)
    return FlagsReport(cmd, res, note, arch, source, skipped, assumed)


def _is_release(text: str) -> bool:
    from spectui.core.versions import parse_version

    try:
        parse_version(text.strip().removeprefix("sglang==").removeprefix("v"))
    except ValueError:
        return False
    return True


def _without_typed_placeholders(cmd: LaunchCommand, cat: FlagCatalogue) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """A placeholder cannot be type-checked (`--port $PORT`): leave such flags out, and say so. Placeholders
    for string values (`--model-path <MODEL_PATH>`) stay: any text is valid there."""
    if not cmd.placeholders:
        return list(cmd.sglang_args), ()
    args, skipped = list(cmd.sglang_args), []
    i = 0
    while i < len(args):
        name, eq, val = args[i].partition("=")
        spec = cat.spec_for(name) if name.startswith("--") else None
        value = val if eq else (args[i + 1] if i + 1 < len(args) else "")
        n = 1 if eq else 2
        if spec is not None and spec.takes_value and spec.type not in (None, "str", "nullable_str") \
                and any(p in value for p in cmd.placeholders):
            skipped.append((spec.name, value))
            del args[i:i + n]
            continue
        i += 1
    return args, tuple(skipped)


def _arch_from_config(cmd: LaunchCommand, cat: FlagCatalogue) -> tuple[str | None, str]:
    path = _model_path(cmd, cat)
    if path is None:
        return None, "no --model-path in the command"
    if any(p in path for p in cmd.placeholders):
        return None, f"model path {path} is a placeholder"
    config = os.path.join(os.path.expanduser(path), "config.json")
    try:
        with open(config, encoding="utf-8") as fh:
            archs = json.load(fh).get("architectures") or []
    except FileNotFoundError:
        return None, f"{config} not found here (HF repo id, or the model lives on another host)"
    except (OSError, ValueError, AttributeError) as exc:
        return None, f"{config} unreadable ({exc.__class__.__name__})"
    if not archs:
        return None, f"{config} has no architectures"
    return str(archs[0]), config


def _model_path(cmd: LaunchCommand, cat: FlagCatalogue) -> str | None:
    args = list(cmd.sglang_args)
    for i, a in enumerate(args):
        name, eq, val = a.partition("=")
        spec = cat.spec_for(name) if name.startswith("--") else None
        if spec is not None and spec.dest == "model_path":
            return val if eq else (args[i + 1] if i + 1 < len(args) else None)
    if args and not args[0].startswith("-") and cmd.entry == "sglang":
        return args[0]  # `sglang serve <model>`
    return None


def _clean(text: str) -> str:
    """Log text is data: escapes and control characters dropped for display (core.text)."""
    return terminal_safe(text, None)


def _fmt(value: Any) -> str:
    return "-" if value is None else json.dumps(value) if not isinstance(value, str) else value


def render_human(report: FlagsReport) -> str:
    res, cmd = report.resolution, report.command
    arch = report.model_arch or "unknown"
    lines = [f"SGLang {res.version} · {' '.join(cmd.program)} · target {arch} ({report.arch_source})"]
    if res.catalogue is not None:
        pick = res.catalogue
        how = (pick.why if pick.source == "host" else f"{pick.source}, exact") if pick.exact else f"not exact: {pick.why}"
        lines.append(f"flags judged with catalogue {pick.version} ({_clean(how)})")
    if cmd.env:
        lines.append("env: " + " ".join(f"{k}={_clean(v)}" for k, v in cmd.env))
    lines.append("")
    if res.outcome == "argparse_error":
        lines += ["FAILS at argument parsing (exit 2). SGLang prints its usage, then:",
                  f"  {res.prog}: error: {_clean(res.argparse_error or '')}"]
    elif res.outcome == "error" and res.error is not None:
        msg = f": {res.error.message}" if res.error.message else " (bare, no message)"
        lines += [f"FAILS while resolving arguments (exit 1): {res.error.type}{msg}",
                  f"  raised in {res.error.raised_at}"]
    elif res.verdict == "startup_error":
        lines += [f"FAILS at start-up (exit 1): {_clean(res.startup_failure or '')}",
                  "  the arguments resolve, but the server would not come up"]
    elif res.verdict == "overridden":
        lines.append(f"OVERRIDDEN: SGLang starts, but changes {len(res.overrides)} value(s) you set:")
        for o in res.overrides:
            lines.append(f"  {_clean(o.sentence())}")
            if o.fix:
                lines.append(f"    to get what you asked: {_clean(o.fix)}")
    else:
        lines.append("OK: SGLang starts with these flags, every value as asked")
    view = report.effective_view()
    keys = [*(k for k in SPEC_VIEW if view and k in view or k in res.requested),
            *(k for k in res.requested if k not in SPEC_VIEW and k != "model_path")]
    if keys:
        rows = []
        for k in dict.fromkeys(keys):
            req = _clean(_fmt(res.requested.get(k))) if k in res.requested else "-"
            eff = _clean(_fmt(view.get(k))) if view is not None else "(not started)"
            changed = view is not None and k in res.requested and res.requested[k] != view.get(k)
            rows.append((k, req, eff + ("  <- changed" if changed else "")))
        width = min(max(len("requested"), *(len(r[1]) for r in rows)), 48)
        lines += ["", f"  {'flag':<30} {'requested':<{width}}  effective"]
        lines += [f"  {k:<30} {req:<{width}}  {eff}" for k, req, eff in rows]
    if res.warnings:
        lines += ["", "Warnings SGLang logs (exact text, in order):"] + [f"  {_clean(w)}" for w in res.warnings]
    diags = report.diagnoses()
    if diags:
        lines += ["", "Why / what to do:"]
        for n in diags:
            sign = {"error": "x", "warning": "!", "info": "i"}[n.severity]
            lines.append(f"  {sign} {_clean(n.title)}")
            lines.append(f"    {_clean(n.explanation)}")
            if n.fix_set or n.fix_unset:
                fix = " ".join([*(f"{f} {v}".strip() for f, v in n.fix_set), *(f"(remove {f})" for f in n.fix_unset)])
                lines.append(f"    fix: {fix}")
    notes = report.notes()
    if notes:
        lines += ["", "Notes:"] + [f"  - {_clean(x)}" for x in notes]
    return "\n".join(lines) + "\n"
