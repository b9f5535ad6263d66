"""`spectui sweep --baseline`: the no-speculation baseline measured once, before the grid, through
ops.bench.baseline with the sweep's own workload (the original command benched, relaunched with every
--speculative-* flag unset, benched, restored and checked speculating). Every config's bench then carries
that baseline (`source: "measured"`) and its speedup on aggregate and per-request tok/s.

A resumed sweep takes the baseline from its journal instead of measuring it again. When the baseline
fails (the launch without speculation did not come up, its bench failed) the sweep goes on without one and
says why; an interruption (Ctrl-C) stops the sweep after the original command runs again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from spectui.errors import SpectuiError
from spectui.ops.bench import run as bench
from spectui.ops.relaunch.plan import Edits


@dataclass
class BaselineOutcome:
    baseline: dict[str, Any] | None  # the sweep JSON's `baseline` (source "measured"), or None
    error: str | None = None
    interrupted: bool = False
    pid: int | None = None  # what runs afterwards when known (the restored original)


def block(spec_out: Mapping[str, Any]) -> dict[str, Any] | None:
    """The sweep's `baseline` object from bench_baseline.run's result."""
    base = spec_out.get("baseline")
    if not base or base.get("source") != "measured":
        return None
    run = spec_out.get("baseline_run") or {}
    restored = run.get("restored") or {}
    per = spec_out.get("per_request_tokens_per_s") or {}
    return {**base, "launch_id": run.get("baseline_launch_id"), "restore_launch_id": restored.get("launch_id"),
            "original": {"output_tokens_per_s": spec_out.get("output_tokens_per_s"),
                         "per_request_tokens_per_s": {"mean": per.get("mean"), "p50": per.get("p50")},
                         "accept_len": (spec_out.get("spec") or {}).get("accept_len"),
                         "speedup": spec_out.get("speedup"), "history_id": spec_out.get("history_id")}}


async def measure(host: Any, config: Any, prompts: Any, *, pid: int | None, history_path: Any, options: Any,
                  note: Callable[[str], None], started: Callable[[asyncio.Task[Any]], None],
                  on_phase: Callable[[str], None] | None = None) -> BaselineOutcome:
    """bench --baseline on the original command; `started(task)` hands the task to the sweep's interrupt."""
    from spectui.ops.bench import baseline as bench_baseline

    plan = bench.BenchPlan(config, prompts, pid=pid, history_path=history_path)

    def phase(name: str) -> None:
        if on_phase:
            on_phase(name)
        if name in ("speculative", "relaunch", "baseline", "restore"):
            note(f"  baseline: {name}")

    task = asyncio.create_task(bench_baseline.run(host, plan, on_phase=phase, on_step=lambda m: note(f"  {m}"),
                                                  options=options))
    started(task)
    try:
        out = await task
    except bench_baseline.BaselineInterrupted as exc:
        return BaselineOutcome(None, str(exc), interrupted=True)
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        # cancelled before its first relaunch: the original command was never touched
        return BaselineOutcome(None, "interrupted before the baseline", interrupted=True, pid=pid)
    except SpectuiError as exc:
        return BaselineOutcome(None, f"baseline not measured: {exc}")
    restored = (out.get("baseline_run") or {}).get("restored") or {}
    found = block(out)
    return BaselineOutcome(found, None if found else "baseline not measured", pid=restored.get("pid"))


def apply(out: dict[str, Any], baseline: Mapping[str, Any] | None) -> None:
    """A config's bench result against the measured baseline (in place)."""
    if not baseline or out is None:
        return
    base = {k: baseline.get(k) for k in ("output_tokens_per_s", "per_request_tokens_per_s", "concurrency",
                                         "source", "history_id")}
    out["baseline"] = base
    out["speedup"] = bench.speedup(out, base)


def restore_spec(edits: Edits, original_argv: Sequence[str], argv: Sequence[str]) -> Edits:
    """`edits` plus the original's --speculative-* flags the current command lacks (a server left without
    speculation by a failed restore: the next launch puts them back), axes' own flags excepted."""
    from spectui.ops.bench.baseline import speculative_flags

    have, want = speculative_flags(list(argv)), speculative_flags(list(original_argv))
    named = {s[0] for s in edits.sets} | set(edits.unsets)
    extra = tuple((f[2:], v) for f, v in want.items() if f not in have and f[2:] not in named)
    return replace(edits, sets=extra + edits.sets) if extra else edits


def same_command(a: Sequence[str], b: Sequence[str]) -> bool:
    """The same flags with the same values, in any order."""
    from spectui.core.launch import flag_values, parse_command

    return flag_values(parse_command(list(a))) == flag_values(parse_command(list(b)))
