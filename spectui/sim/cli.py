"""`python -m spectui.sim`: SGLang's command line (through spectui.core's catalogue and resolver), then the server.

The simulator's own knobs come from `SPECTUI_SIM_*` environment variables, or from `--sim-*` flags that
override them (spectui.sim.knobs); `python -m spectui.sim` with SGLang's flags alone is a demo server.

What a user sees before the first log line follows the emulated release: argparse's usage and error
lines (exit 2); warnings printed bare on ≤0.5.10 (logging is not configured yet) and with a
`[timestamp] ` from 0.5.11; a traceback shaped like SGLang's for a resolution error (exit 1).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from spectui.sim.knobs import KNOB_HELP, KnobError, SimKnobs, env_name, label_of, read_knobs
from spectui.sim.logfmt import LogFormat
from spectui.sim.model import SpecConfig
from spectui.sim.resolvetb import resolution_traceback
from spectui.sim.startup import draft_arch_for

LAUNCH_WARNING = [
    "{site}/launch_server.py:14: UserWarning: 'python -m sglang.launch_server' is still supported, but "
    "'sglang serve' is the recommended entrypoint.",
    "  Example: sglang serve --model-path <model> [options]",
    "  warnings.warn(",
]


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def spec_config(effective: dict[str, object]) -> SpecConfig | None:
    """The decode model's view of the resolved speculative parameters (None: speculation off)."""
    if not effective.get("speculative_algorithm"):
        return None
    steps = effective.get("speculative_num_steps")
    topk = effective.get("speculative_eagle_topk")
    ndt = effective.get("speculative_num_draft_tokens")
    ndt_i = int(ndt) if ndt else 4  # type: ignore[call-overload]
    steps_i = int(steps) if steps else max(1, ndt_i - 1)  # type: ignore[call-overload]
    return SpecConfig(num_steps=steps_i, topk=int(topk) if topk else 1, draft_tokens=ndt_i)  # type: ignore[call-overload]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["--sim-help"],):
        _err("simulator knobs (environment variable, or the flag, which wins):\n"
             + "\n".join(f"  {env_name(k)}=V | {k} V  {h}" for k, h in KNOB_HELP.items()))
        return 0
    try:
        sglang_argv, knobs = read_knobs(argv)
    except KnobError as exc:
        _err(f"spectui.sim: error: {exc}")
        return 2
    from spectui.core.launch import ArgparseFailure, load_catalogue, pick_version, resolve

    try:
        version, fallback = pick_version(knobs.sglang_version)
    except ValueError as exc:
        _err(f"spectui.sim: error: {label_of('--sim-sglang-version', os.environ, argv)}: {exc}")
        return 2
    if fallback and sys.stderr.isatty():
        # A notice of the simulator's, not SGLang's: said on a terminal, never written into the log the
        # simulator presents as SGLang's (`> server.log 2>&1`), which must read like SGLang's own.
        _err(f"spectui.sim: {fallback}")
    fmt = LogFormat(version)
    if fmt.v >= (0, 5, 10):
        for line in LAUNCH_WARNING:
            _err(line.format(site="/usr/local/lib/python3.12/dist-packages/sglang"))
    catalogue = load_catalogue(version)
    try:
        parsed = catalogue.parse_args(sglang_argv, fmt.prog)
    except ArgparseFailure:
        parsed = None  # resolve() reports it below, with argparse's own message
    if parsed is not None and parsed.help_requested:
        # argparse prints the help and exits 0 before anything runs (the bundled catalogues carry no
        # help texts, so the usage block stands in for it).
        sys.stdout.write(catalogue.format_usage(fmt.prog))
        sys.stdout.flush()
        return 0
    res = resolve(sglang_argv, version, model_arch=knobs.model_arch, env=dict(os.environ))
    if res.outcome == "argparse_error":
        usage = res.usage or catalogue.format_usage(res.prog)
        sys.stderr.write(usage if usage.endswith("\n") else usage + "\n")
        _err(f"{res.prog}: error: {res.argparse_error}")
        return 2
    parse_warnings = len(parsed.parse_warnings) if parsed is not None else 0
    for i, text in enumerate(res.warnings):
        # Deprecation notices are print()ed by argparse actions: always bare. Logger warnings are bare
        # only before 0.5.11, when logging is configured after argument resolution.
        _err(text if i < parse_warnings or fmt.bare_warnings else fmt.main(text))
    if res.outcome == "error" and res.error is not None:
        for line in resolution_traceback(version, res.error.type, res.error.message, res.error.raised_at):
            _err(line)
        return 1
    effective = dict(res.effective or {})  # ServerArgs field names (tp_size, not tensor_parallel_size)
    fmt = LogFormat(version, tp_size=int(effective.get("tp_size") or 1),  # type: ignore[call-overload]
                    device=str(effective.get("device") or "cuda"))
    return run_server(knobs, fmt, effective, sglang_argv)


def run_server(knobs: SimKnobs, fmt: LogFormat, effective: dict[str, object], sglang_argv: list[str]) -> int:
    from spectui.sim.app import SimApp

    spec = spec_config(effective)
    algorithm = str(effective.get("speculative_algorithm") or "") or None
    app = SimApp(knobs=knobs, fmt=fmt, args=effective, launch_argv=sglang_argv, spec=spec,
                 draft_arch=draft_arch_for(algorithm, knobs.model_arch))
    return asyncio.run(app.run())
