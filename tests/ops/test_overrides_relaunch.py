"""#23: `relaunch --set speculative-num-steps=5 --dry-run` on a 3/1/4 chain keeps
`--speculative-num-draft-tokens 4`, which SGLang makes 6: the verdict is `overridden`, never "ok", and
`--json` lists the override. On a simulated server started the way an operator starts one."""

from __future__ import annotations

import json
import subprocess
import sys

from ops_simlab import SIM_FAST_ENV, SimLab, alive, wait_health

CHAIN = ["--model-path", "/models/kimi-k2.5-int4", "--speculative-algorithm", "EAGLE3",
         "--speculative-draft-model-path", "/data/eagle3/4", "--speculative-num-steps", "3",
         "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def dry_run(pid: int, *sets: str, json_out: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "spectui.cli", "relaunch", "local", "--pid", str(pid), "--dry-run",
            *(a for s in sets for a in ("--set", s)), *(["--json"] if json_out else [])]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_steps_five_keeping_draft_tokens_four_is_overridden(lab: SimLab) -> None:
    pid = lab.start(CHAIN, env=SIM_FAST_ENV)
    wait_health(lab.port)
    done = dry_run(pid, "speculative-num-steps=5")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["verdict"] == "overridden", plan["verdict_detail"]
    assert plan["overrides"] == [{
        "flag": "--speculative-num-draft-tokens", "asked": 4, "effective": 6,
        "why": "topk 1 makes it steps + 1 (5 + 1)",
        "fix": {"set": {"--speculative-num-steps": "3"}, "unset": []}}]
    assert "draft tokens: asked 4, SGLang will use 6" in plan["verdict_detail"]
    # The human plan (what a confirmation shows) says it too, with the fix.
    human = dry_run(pid, "speculative-num-steps=5", json_out=False)
    assert human.returncode == 0
    assert "verdict  overridden: draft tokens: asked 4, SGLang will use 6" in human.stdout
    assert "fix for draft tokens: --speculative-num-steps 3 for a chain of 4 draft tokens" in human.stdout
    # Asking for both values SGLang keeps is "ok", with no overrides.
    both = json.loads(dry_run(pid, "speculative-num-steps=5", "speculative-num-draft-tokens=6").stdout)
    assert both["verdict"] == "ok" and both["overrides"] == []
    assert alive(pid)
