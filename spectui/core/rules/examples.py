"""Run a rule's own [[examples]] through the real pipeline (parser + metrics + engine) and judge them.

Used by tests/rules and by `spectui rules test`. A metric series becomes synthetic SGLang decode lines
(0.5.5–0.5.8 format) so it takes the same path as a real log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spectui.core.launch import LaunchCommand, parse_pasted
from spectui.core.rules.compile import Rule
from spectui.core.rules.engine import Diagnosis, RuleEngine

if TYPE_CHECKING:
    from spectui.core.rules.schema import Example


@dataclass(frozen=True, slots=True)
class ExampleResult:
    rule: str
    index: int  # 0-based position in the rule's [[examples]]
    expect: str
    ok: bool
    detail: str  # why it failed, or what fired
    diagnosis: Diagnosis | None


def parse_launch(text: str) -> LaunchCommand:
    """A launch command as pasted (core.launch.pasted): the flags alone mean `python -m sglang.launch_server`."""
    return parse_pasted(text)[0]


def example_lines(example: Example) -> list[str]:
    lines = example.log.strip("\n").split("\n") if example.log else []
    if example.series:
        tps = example.tps if isinstance(example.tps, list) else [example.tps or 50.0] * len(example.series)
        for i, accept in enumerate(example.series):
            rate = tps[i] if i < len(tps) else tps[-1]
            lines.append(
                f"[2025-12-03 10:{i // 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: {example.running}, "
                f"#token: {1000 + 40 * i}, token usage: 0.05, accept len: {accept:.2f}, cuda graph: True, "
                f"gen throughput (token/s): {rate:.2f}, #queue-req: {example.queue}, "
            )
    return lines


def run_example(rule: Rule, index: int, rules: Sequence[Rule] | None = None) -> ExampleResult:
    """Feed example `index` of `rule` through a Pipeline with `rules` (default: the rule alone)."""
    from spectui.core.log import Pipeline

    example = rule.examples[index]
    launch = parse_launch(example.launch) if example.launch else None
    engine = RuleEngine(list(rules) if rules is not None else [rule], launch=launch,
                        version=example.version, baseline_tps=example.baseline_tps, draft=example.draft or ())
    pipeline = Pipeline(engine=engine)
    pipeline.feed_lines(example_lines(example))
    if example.process_gone:
        engine.set_process_gone()
    pipeline.finish()
    diag = next((d for d in engine.diagnoses if d.rule == rule.id), None)
    if example.expect == "no-fire":
        ok = diag is None
        detail = "did not fire" if ok else f"fired: {diag.message if diag else ''}"
        return ExampleResult(rule.id, index, example.expect, ok, detail, diag)
    if diag is None:
        return ExampleResult(rule.id, index, example.expect, False, "did not fire", None)
    problems = []
    got_set = dict(diag.fix.set) if diag.fix else None
    if example.fix is not None and got_set != example.fix:
        problems.append(f"fix set {got_set} != expected {example.fix}")
    if example.unset is not None and list(diag.fix.unset if diag.fix else []) != example.unset:
        problems.append(f"fix unset {list(diag.fix.unset) if diag.fix else None} != expected {example.unset}")
    if example.text is not None and example.text not in diag.message + "\n" + "\n".join(diag.evidence):
        problems.append(f"{example.text!r} not in the diagnosis ({diag.message!r})")
    detail = "; ".join(problems) if problems else f"fired: {diag.message}"
    return ExampleResult(rule.id, index, example.expect, not problems, detail, diag)


def run_all(rules: Sequence[Rule]) -> list[ExampleResult]:
    return [run_example(rule, i) for rule in rules for i in range(len(rule.examples))]
