"""The simulator's own knobs: `SPECTUI_SIM_*` environment variables, and `--sim-*` flags that override them.

The environment is how spectui itself (the demo, scenarios, tests through relaunch) sets the knobs: SGLang's
command line stays exactly SGLang's, and a relaunch carries the environment over. The `--sim-*` flags are
for people running `python -m spectui.sim` by hand; they are split out of argv here, before SGLang's
parser sees it. Without any knob it is a plain demo server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spectui.core.launch import sim_knob_len as knob_len  # one reading of a knob's words, shared with core
from spectui.sim.faults import FAULT_NAMES, Fault, KnobError

DEFAULT_ALPHA = 0.8
DEFAULT_BASELINE_TPS = 90.0
ENV_PREFIX = "SPECTUI_SIM_"

# flag -> help text; every knob takes exactly one value except --sim-fault crash-after N (see knob_len).
KNOB_HELP: dict[str, str] = {
    "--sim-sglang-version": "SGLang release to emulate (log formats, warnings, flag rules); default: newest bundled",
    "--sim-time-scale": "a GPU X times faster: start-up, traffic and generation (every figure a client sees, the "
                        "log's tok/s included, is in wall-clock seconds; default 1)",
    "--sim-alpha": f"per-token acceptance of the simulated draft (default {DEFAULT_ALPHA})",
    "--sim-baseline-tps": f"decode tok/s of one request without speculation at time scale 1 (default "
                          f"{DEFAULT_BASELINE_TPS:g}; a client sees X times that at --sim-time-scale X)",
    "--sim-traffic": "built-in client load in requests/s (default 0: only external requests)",
    "--sim-output-len": "tokens generated per built-in request (default 256)",
    "--sim-concurrency": "most built-in requests in flight at once, like a benchmark's --max-concurrency "
                         "(default 0: no limit)",
    "--sim-fault": "inject a failure: " + ", ".join(FAULT_NAMES),
    "--sim-model-arch": "architecture of the simulated target (default LlamaForCausalLM)",
    "--sim-seed": "random seed (default 0)",
    "--sim-alpha-decay": "r: acceptance at draft position i is alpha * r^(i-1) (default 0.97, docs/SIMULATOR.md)",
    "--sim-verify-cost": "extra cost (MoE expert traffic) of each verified draft token beyond one per request, in plain "
                         "decode steps at batch 1; 0 = dense target (default 0.026, docs/SIMULATOR.md)",
    "--sim-spec-counters": "1: /server_info also reports a patched build's spec_cumulative_* counters (default 0)",
}


def env_name(flag: str) -> str:
    """`--sim-time-scale` -> `SPECTUI_SIM_TIME_SCALE`."""
    return ENV_PREFIX + flag.removeprefix("--sim-").upper().replace("-", "_")


ENV_KNOBS: dict[str, str] = {env_name(flag): flag for flag in KNOB_HELP}  # variable -> flag


@dataclass(frozen=True, slots=True)
class SimKnobs:
    sglang_version: str | None = None
    time_scale: float = 1.0
    alpha: float = DEFAULT_ALPHA
    baseline_tps: float = DEFAULT_BASELINE_TPS
    traffic_rps: float = 0.0
    output_len: int = 256
    concurrency: int = 0
    fault: Fault | None = None
    model_arch: str = "LlamaForCausalLM"
    seed: int = 0
    alpha_decay: float | None = None  # None: spectui.sim.model's default
    verify_cost: float | None = None
    spec_counters: bool = False

    @property
    def client_baseline_tps(self) -> float:
        """No-speculation tok/s of one request as a client measures it (wall clock): the time scale makes the
        simulated GPU `time_scale` times faster, and every figure a client sees follows (docs/SIMULATOR.md)."""
        return self.baseline_tps * self.time_scale


def knob_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The knob variables of an environment (`SPECTUI_SIM_*`), empty ones left out (an empty value = unset)."""
    return {k: v for k, v in environ.items() if k.startswith(ENV_PREFIX) and v.strip()}


def split_argv(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[list[str], SimKnobs]:
    """Return (the argv SGLang's parser sees, the knobs). Knobs come from `environ` (`SPECTUI_SIM_*`;
    default: none) and from `--sim-x V` / `--sim-x=V` in argv, which win over the environment."""
    values: dict[str, str] = {}
    labels: dict[str, str] = {}  # flag -> what the operator wrote it as (the flag or the variable)
    for var, value in sorted(knob_env(environ or {}).items()):
        flag = ENV_KNOBS.get(var)
        if flag is None:
            raise KnobError(f"unknown simulator knob variable {var}; known: {', '.join(ENV_KNOBS)}")
        values[flag], labels[flag] = value.strip(), var
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--sim-"):
            rest.append(arg)
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in KNOB_HELP:
            raise KnobError(f"unknown simulator knob {name}; known: {', '.join(KNOB_HELP)}")
        n = knob_len(argv, i)
        if not eq:
            if n == 1:
                raise KnobError(f"{name} needs a value")
            value = argv[i + 1]
        if n > (1 if eq else 2):  # `--sim-fault crash-after 3`: the count is a separate word
            value = f"crash-after:{argv[i + n - 1]}"
        values[name], labels[name] = value, name
        i += n
    return rest, _build(values, labels)


def read_knobs(argv: Sequence[str]) -> tuple[list[str], SimKnobs]:
    """split_argv with this process's environment: what `python -m spectui.sim` does."""
    return split_argv(argv, os.environ)


def label_of(flag: str, environ: Mapping[str, str], argv: Sequence[str]) -> str:
    """How the operator gave knob `flag`: the flag itself if argv has it, else its variable if set."""
    if any(w.partition("=")[0] == flag for w in argv):
        return flag
    return env_name(flag) if env_name(flag) in knob_env(environ) else flag


def _fault(text: str, label: str) -> Fault:
    if label.startswith("--"):
        return Fault.parse(text)  # its messages are written for the flag
    name, _, count = " ".join(text.split()).replace(" ", ":").replace("=", ":").partition(":")
    if name == "crash-after" and not count.isdigit():
        raise KnobError(f"{label}=crash-after needs a request count, e.g. {label}='crash-after 3'")
    try:
        return Fault.parse(f"{name}:{count}" if count else name)
    except KnobError:
        raise KnobError(f"unknown {label} value {text!r}; choose from: {', '.join(FAULT_NAMES)}") from None


def _build(values: dict[str, str], labels: dict[str, str]) -> SimKnobs:
    def num(name: str, default: float, *, positive: bool = True) -> float:
        if name not in values:
            return default
        label = labels.get(name, name)
        try:
            x = float(values[name])
        except ValueError:
            raise KnobError(f"{label} expects a number, got {values[name]!r}") from None
        if x < 0 or (positive and x == 0):
            raise KnobError(f"{label} must be {'> 0' if positive else '>= 0'}, got {values[name]}")
        return x

    alpha = num("--sim-alpha", DEFAULT_ALPHA)
    if alpha >= 1.0:
        raise KnobError(f"{labels.get('--sim-alpha', '--sim-alpha')} must be in (0, 1), got {values['--sim-alpha']}")
    fault = _fault(values["--sim-fault"], labels.get("--sim-fault", "--sim-fault")) if "--sim-fault" in values else None
    return SimKnobs(
        sglang_version=values.get("--sim-sglang-version"),
        time_scale=num("--sim-time-scale", 1.0),
        alpha=alpha,
        baseline_tps=num("--sim-baseline-tps", DEFAULT_BASELINE_TPS),
        traffic_rps=num("--sim-traffic", 0.0, positive=False),
        output_len=int(num("--sim-output-len", 256)),
        concurrency=int(num("--sim-concurrency", 0, positive=False)),
        fault=fault,
        model_arch=values.get("--sim-model-arch", "LlamaForCausalLM"),
        seed=int(num("--sim-seed", 0, positive=False)),
        alpha_decay=num("--sim-alpha-decay", 0.0) if "--sim-alpha-decay" in values else None,
        verify_cost=num("--sim-verify-cost", 0.0, positive=False) if "--sim-verify-cost" in values else None,
        spec_counters=bool(num("--sim-spec-counters", 0, positive=False)),
    )
