"""`relaunch --json`'s plan never prints a secret flag's value: `--set api-key=…` is masked in "diff" as in the
history and the commands (ops.history.masked_diff / core.secrets.display_argv)."""

from __future__ import annotations

import json
from datetime import datetime

from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.sources.base import ServerProcess

ARGV = ("python", "-m", "sglang.launch_server", "--model-path", "/m", "--port", "8000", "--api-key", "sk-old-secret",
        "--speculative-algorithm", "EAGLE3", "--speculative-eagle-topk", "1", "--speculative-num-steps", "1",
        "--speculative-num-draft-tokens", "2", "--speculative-draft-model-path", "/d")


def test_plan_json_masks_a_set_api_key_in_the_diff() -> None:
    server = ServerProcess(pid=10, pgid=10, argv=ARGV, env={"PATH": "/bin"}, cwd="/w", log_path="/w/s.log",
                           port=8000, host_addr="127.0.0.1")
    edits = Edits.from_cli(["api-key=sk-new-secret", "admin-api-key=sk-admin-secret", "speculative-num-steps=3"])
    plan = build_plan(server, edits, host_name="local", now=datetime(2026, 1, 2, 3, 4, 5), server_version="0.5.6")
    out = plan.to_json()
    rows = {d["flag"]: d for d in out["diff"]}
    assert rows["--api-key"] == {"flag": "--api-key", "old": "***", "new": "***"}
    assert rows["--admin-api-key"] == {"flag": "--admin-api-key", "old": None, "new": "***"}
    assert rows["--speculative-num-steps"] == {"flag": "--speculative-num-steps", "old": "1", "new": "3"}
    text = json.dumps(out)
    assert "secret" not in text, text  # nowhere in the JSON: not the diff, the command or the host commands
    assert "secret" not in plan.render()
