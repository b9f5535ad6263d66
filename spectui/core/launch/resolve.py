"""What a given SGLang release does with a command line's speculative flags: outcome, warnings, values.

Mirrors the order of SGLang's own code per release (ServerArgs.__post_init__ <= 0.5.2,
_handle_speculative_decoding 0.5.3-0.5.12, arg_groups/speculative_hook.py 0.5.15+), because the order
decides which warnings print before an exception. Pure: the caller passes the target architecture in.

Field names in `requested`, `effective` and `server_args` are SGLang's own names, i.e. the ServerArgs
fields (`tp_size`, `dp_size`, ...) as the `server_args=` log line and `/server_info` spell them, not the
argparse dests some releases parse into (`tensor_parallel_size`, ...): serverfields.py holds the renames
`ServerArgs.from_cli_args` does, per release. For every other flag the dest and the field are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from spectui.core.launch import resolution as R
from spectui.core.launch.catalogue import (
    ArgparseFailure,
    CataloguePick,
    DeprecatedFlagUsed,
    FlagCatalogue,
    load_catalogue,
    pick_catalogue,
)
from spectui.core.launch.engine import IPC_DEPRECATED, ResolutionRun, RuleRaised
from spectui.core.launch.explain import explain_argparse, explain_differences, explain_error, find_overrides
from spectui.core.launch.notes import FlagNote, Override
from spectui.core.launch.resolution import RESOLVED_APART_SINCE
from spectui.core.launch.serverfields import to_fields
from spectui.core.versions import Version, parse_version, v

SPEC_VIEW = (
    "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "max_running_requests", "disable_overlap_schedule", "disable_cuda_graph",
    "page_size",
)


@dataclass(frozen=True, slots=True)
class ResolveError:
    type: str  # "AssertionError", "TypeError", "ValueError", ...
    message: str  # str(exception): "" for SGLang's bare assert
    explanation: str  # plain words: what to change
    raised_at: str | None = None  # SGLang function that raised


@dataclass(frozen=True)
class Resolution:
    version: str
    outcome: Literal["ok", "error", "argparse_error"]
    argparse_error: str | None
    error: ResolveError | None
    requested: dict[str, object]  # ServerArgs field -> value, only flags given on the command line
    effective: dict[str, object] | None  # ServerArgs field -> resolved value (ok only)
    warnings: list[str]
    catalogue_version: str = ""
    prog: str = ""
    usage: str = ""  # argparse's usage block (argparse_error only)
    server_args: dict[str, object] | None = None  # ServerArgs fields after resolution (0.5.19+: as parsed)
    notes: list[FlagNote] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    help_requested: bool = False  # -h/--help: SGLang prints help and exits 0
    catalogue: CataloguePick | None = None  # which flag catalogue judged the command line, and why
    overrides: list[Override] = field(default_factory=list)  # asked values SGLang replaces (ok only)
    startup_failure: str | None = None  # resolves, but start-up is predicted to fail later: why

    @property
    def verdict(self) -> Literal["ok", "overridden", "startup_error", "error", "argparse_error"]:
        """One word for every screen: `ok` only when SGLang starts with every value as asked."""
        if self.outcome != "ok":
            return self.outcome
        if self.startup_failure:
            return "startup_error"
        return "overridden" if self.overrides else "ok"


def prog_for(version: Version, entry: str = "launch_server") -> str:
    if version >= v("0.5.10"):
        return "sglang serve"
    return "sglang" if entry == "sglang" else "launch_server.py"


def resolve(args: Sequence[str], version: str, *, model_arch: str | None = None,
            draft_arch: str | None = None, env: Mapping[str, str] | None = None,
            device: str = "cuda", entry: str | None = None,
            host_catalogue: FlagCatalogue | None = None) -> Resolution:
    """Resolve `args` (what SGLang's argparse sees) the way SGLang `version` would. Raises ValueError
    only for a version that is not a release number.

    `entry` is the program: "sglang" (`sglang serve`) or "launch_server" (`python -m sglang.launch_server`,
    which takes no positional model path in any release); None when the caller does not know, which
    accepts the positional form where `sglang serve` would.

    `host_catalogue`: the flags read from the host's own SGLang (data/dump_flags.py via
    launch.hostflags), used instead of a bundled catalogue — for a release spectui does not ship."""
    if host_catalogue is not None:
        cat = host_catalogue
        pick = CataloguePick(cat.version, _clean(version) == cat.version, f"read from the host's own SGLang "
                             f"{cat.version} (its ServerArgs.add_cli_args)", "host")
    else:
        pick = pick_catalogue(version)
        cat = load_catalogue(pick.version)
    cat_version, pick_warning = pick.version, None if pick.exact else pick.why
    ver = parse_version(_clean(version)) if version and _clean(version) != "latest" else parse_version(cat_version)
    prog = prog_for(ver, entry or "launch_server")
    assumptions = [pick_warning] if pick_warning else []
    argv = list(args)
    if ver >= v("0.5.18") and entry != "launch_server" and argv and not argv[0].startswith("-"):
        argv = ["--model-path", *argv]  # `sglang serve <model>` (cli/serve.py); launch_server has no such form
    base: dict[str, Any] = dict(version=version, catalogue_version=cat_version, prog=prog, assumptions=assumptions,
                                catalogue=pick)
    if entry == "sglang" and (missing := _serve_model_path_missing(argv, ver, assumptions)):
        err = ResolveError("Exception", missing, "`sglang serve` in this release finds the model only via a "
                           "literal --model-path: write --model-path <model>.", "get_model_path")
        return Resolution(outcome="error", argparse_error=None, error=err, requested={}, effective=None,
                          warnings=[], **base)
    try:
        parsed = cat.parse_args(argv, prog)
    except ArgparseFailure as exc:
        return Resolution(outcome="argparse_error", argparse_error=exc.message, error=None, requested={},
                          effective=None, warnings=[], usage=exc.usage,
                          notes=explain_argparse(exc.message, cat, argv), **base)
    except DeprecatedFlagUsed as exc:
        err = ResolveError("ValueError", f"{exc.flag} is deprecated", explain_error(
            "ValueError", f"{exc.flag} is deprecated", {}), "DeprecatedAction.__call__")
        return Resolution(outcome="error", argparse_error=None, error=err, requested={}, effective=None,
                          warnings=[], **base)
    if parsed.help_requested:  # SGLang prints its help and exits 0; nothing is resolved
        return Resolution(outcome="ok", argparse_error=None, error=None, requested={}, effective={},
                          warnings=[], help_requested=True, **base)
    requested = to_fields(parsed.given, ver)  # ServerArgs.from_cli_args: tensor_parallel_size -> tp_size, ...
    if "config" in requested:
        assumptions.append(f"flags inside --config {requested['config']} are merged by SGLang but not read "
                           "here; put them on the command line to check them")
    st: dict[str, Any] = to_fields(parsed.values, ver)
    raw = dict(st)
    warnings = list(parsed.parse_warnings)
    notes: list[FlagNote] = []
    ctx = ResolutionRun(ver, st, warnings, assumptions, env or {}, st.get("device") or device, model_arch, draft_arch)
    try:
        ctx.run()
    except RuleRaised as exc:
        err = ResolveError(exc.type, exc.message, explain_error(exc.type, exc.message, requested),
                           exc.where or ctx.where())
        return Resolution(outcome="error", argparse_error=None, error=err, requested=requested,
                          effective=None, warnings=warnings, notes=notes, **base)
    if ver >= v("0.5.23") and "SGLANG_USE_CUDA_IPC_TRANSPORT" in ctx.env:
        warnings.append(IPC_DEPRECATED)
    server_args = raw if ver >= RESOLVED_APART_SINCE else dict(st)
    notes.extend(explain_differences(requested, st, warnings, ver))
    later = next((a for a in assumptions if a in _startup_failures(model_arch)), None)
    return Resolution(outcome="ok", argparse_error=None, error=None, requested=requested, effective=st,
                      warnings=warnings, server_args=server_args, notes=notes,
                      overrides=find_overrides(requested, st), startup_failure=later, **base)


def _startup_failures(model_arch: str | None) -> tuple[str, ...]:
    """The resolver's assumptions that predict a failure after resolution (the draft worker finds no draft)."""
    return (R.NO_DRAFT_NOT_MTP.format(arch=model_arch),) if model_arch else ()


def _serve_model_path_missing(argv: Sequence[str], ver: Version, assumptions: list[str]) -> str | None:
    """`sglang serve` looks for the model itself before argparse runs (cli/utils.py:get_model_path)."""
    if ver < v("0.5.5"):
        assumptions.append("the `sglang` console script first appears in 0.5.5; this release needs "
                           "`python -m sglang.launch_server`")
        return None
    if ver >= v("0.5.18"):
        return None
    names = ("--model-path",) if ver < v("0.5.11") else ("--model-path", "--model")
    if any(a in names or a.split("=", 1)[0] in names for a in argv):
        return None
    return "Error: --model-path is required. Please provide the path to the model."


def _clean(version: str) -> str:
    return version.strip().removeprefix("sglang==").removeprefix("v")


