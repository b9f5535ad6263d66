"""Demo scenarios: an SGLang launch command and simulator knobs that reproduce one situation each.

The flags are what a user would type (`--host/--port` are added by whoever starts the scenario); the
knobs are `SPECTUI_SIM_*` environment variables (spectui.sim.knobs), so the command line stays SGLang's
alone. The simulated models are a Llama-3.1-8B target with an EAGLE-3 draft, the common setup of SGLang's docs.
"""

from __future__ import annotations

from dataclasses import dataclass

from spectui.sim.knobs import SimKnobs, env_name, split_argv

TARGET = "/models/meta-llama/Llama-3.1-8B-Instruct"
DRAFT = "/models/lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"
_BASE = ("--model-path", TARGET, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", DRAFT,
         "--enable-metrics")
_CHAIN3 = ("--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    summary: str  # one line: what the user will see
    flags: tuple[str, ...]  # SGLang launch_server flags
    knobs: tuple[tuple[str, str], ...] = ()  # (knob flag, value): (("--sim-fault", "oom-at-capture"),)
    traffic: float = 2.0  # built-in client load, requests/s at time scale 1 (X times that at scale X)

    def argv(self, *, host: str, port: int) -> list[str]:
        """Arguments for `python -m spectui.sim`: SGLang's flags only (the knobs go in `env`)."""
        return [*self.flags, "--host", host, "--port", str(port)]

    def env(self, *, time_scale: float, traffic: float | None = None, version: str | None = None) -> dict[str, str]:
        """The scenario's knobs as `SPECTUI_SIM_*` variables; `traffic` overrides the scenario's load."""
        rps = traffic if traffic is not None else self.traffic
        knobs = [("--sim-time-scale", f"{time_scale:g}"), ("--sim-traffic", f"{rps:g}"), *self.knobs]
        if version:
            knobs.append(("--sim-sglang-version", version))
        return {env_name(flag): value for flag, value in knobs}

    def sim_knobs(self, *, time_scale: float = 1.0) -> SimKnobs:
        """The knobs the simulator will run this scenario with (its baseline tok/s, alpha, …)."""
        return split_argv([], self.env(time_scale=time_scale))[1]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("healthy", "EAGLE-3 chain of 3 on Llama-3.1-8B: accept len ~3, faster than no speculation",
             (*_BASE, *_CHAIN3)),
    Scenario("silent-override", "the seed incident: topk 1 with 16 draft tokens and 1 step; SGLang forces "
             "draft tokens to 2, accept len ~1.8, one stream at ~0.7x the speed without speculation (64 vs 90 "
             "tok/s at time scale 1)",
             (*_BASE, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
              "--speculative-num-steps", "1"), (("--sim-concurrency", "1"),), traffic=20.0),
    Scenario("missing-steps", "topk and draft tokens without --speculative-num-steps: a bare AssertionError",
             (*_BASE, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16")),
    Scenario("bad-flag", "vLLM's --num-speculative-tokens: argparse rejects it (exit 2)",
             (*_BASE, "--num-speculative-tokens", "16")),
    Scenario("layer-mismatch", "the launch looks fine, but the draft's hidden-state layers do not match: "
             "accept len ~1.1", (*_BASE, *_CHAIN3), (("--sim-fault", "layer-mismatch"),)),
    Scenario("oom", "CUDA-graph capture runs out of memory at start-up (Scheduler hit an exception, sigquit)",
             (*_BASE, *_CHAIN3, "--mem-fraction-static", "0.93"), (("--sim-fault", "oom-at-capture"),)),
    Scenario("crash", "the scheduler crashes after serving a few requests (SIGQUIT, exit 137)",
             (*_BASE, *_CHAIN3), (("--sim-fault", "crash-after 6"),)),
    Scenario("capacity", "heavy load: 48 requests run (the cap speculation sets) while more queue behind them",
             (*_BASE, *_CHAIN3), (("--sim-output-len", "400"),), traffic=60.0),
    Scenario("nccl-timeout", "a collective hangs after the first requests; the NCCL watchdog fires",
             (*_BASE, *_CHAIN3, "--tp-size", "2"), (("--sim-fault", "nccl-timeout"),)),
)}
