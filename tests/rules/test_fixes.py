"""Fixes name real SGLang flags, and applying a fix makes its own diagnosis go away (resolver closes the loop)."""

from __future__ import annotations

import pytest

from spectui.core.launch import known_versions, load_catalogue, parse_command, set_flag, unset_flag
from spectui.core.rules import RuleEngine, load_rules

RULES, _ = load_rules()
CATALOGUES = [load_catalogue(v) for v in known_versions()]


def test_every_flag_a_fix_sets_exists_in_some_bundled_sglang_release() -> None:
    unknown = sorted({
        (rule.id, flag)
        for rule in RULES for fix in rule.fixes for flag, _ in fix.set
        if not any(cat.canonical(flag) == flag for cat in CATALOGUES)
    })
    assert unknown == []


@pytest.mark.parametrize(
    ("rule_id", "command", "version"),
    [
        # Seed 000: topk 1, 16 draft tokens, steps 1.
        ("SPEC003", "python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
         "--speculative-draft-model-path /d --speculative-eagle-topk 1 --speculative-num-draft-tokens 16 "
         "--speculative-num-steps 1", "0.5.6.post2"),
        # Seed 002, second launch: no --speculative-num-steps.
        ("SPEC002", "python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
         "--speculative-draft-model-path /d --speculative-eagle-topk 1 --speculative-num-draft-tokens 16",
         "0.5.6.post2"),
        ("SPEC002", "sglang serve --model-path /m --speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
         "--speculative-num-draft-tokens 4", "0.5.23"),
        # Seed 002, first launch: vLLM's flag.
        ("SPEC001", "python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
         "--speculative-draft-model-path /d --num-speculative-tokens 16", "0.5.6.post2"),
        ("SPEC007", "python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 "
         "--speculative-draft-model-path /d --speculative-num-steps 3", "0.5.6.post2"),
    ],
)
def test_applying_the_fix_clears_the_diagnosis(rule_id: str, command: str, version: str) -> None:
    cmd = parse_command(command)
    before = {d.rule: d for d in RuleEngine(RULES, launch=cmd, version=version).diagnoses}
    assert rule_id in before, list(before)
    fix = before[rule_id].fix
    assert fix is not None
    for flag in fix.unset:
        cmd = unset_flag(cmd, flag)
    for flag, value in fix.set.items():
        cmd = set_flag(cmd, flag, value or None)
    after = RuleEngine(RULES, launch=cmd, version=version).diagnoses
    assert [d.rule for d in after if d.severity == "error"] == [], cmd.render()
