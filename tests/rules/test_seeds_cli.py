"""The seed incidents (../shared/seeds) through `spectui check` exactly as a user runs it (subprocess).

Seed 002: launch 1 used vLLM's --num-speculative-tokens 16; launch 2 set topk 1 and 16 draft tokens
without --speculative-num-steps (bare AssertionError). Seed 000: topk 1, 16 draft tokens, steps 1 ->
SGLang ran 2 draft tokens; accept len ~1.6; 56.8 tok/s against a 90 tok/s baseline.
Log lines follow SGLang 0.5.6's exact formats (docs/REFERENCE.md §1.4, §2.1, §2.2, §3.2).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SEED_LAUNCH = (
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 NCCL_PROTO=LL ~/ml-env/bin/python3 -m sglang.launch_server "
    "--model-path /shared/kimi-k2.5-int4 --trust-remote-code --tp-size 8 --mem-fraction-static 0.88 "
    "--host 0.0.0.0 --port 8000 --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path /data/eagle3/output_100k_sglang/4 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 16"
)
ARGPARSE_LOG = """usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]
launch_server.py: error: unrecognized arguments: --num-speculative-tokens 16
"""
ASSERT_LOG = """Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/root/ml-env/lib/python3.12/site-packages/sglang/srt/server_args.py", line 620, in __post_init__
    self._handle_speculative_decoding()
  File "/root/ml-env/lib/python3.12/site-packages/sglang/srt/server_args.py", line 1725, in _handle_speculative_decoding
    assert (
AssertionError
"""
OVERRIDE_LOG = """Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding.
speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1
[2025-12-03 10:00:00] server_args=ServerArgs(model_path='/shared/kimi-k2.5-int4', tp_size=8, speculative_algorithm='EAGLE3', speculative_num_steps=1, speculative_eagle_topk=1, speculative_num_draft_tokens=2, max_running_requests=48)
[2025-12-03 10:00:30] The server is fired up and ready to roll!
""" + "".join(
    f"[2025-12-03 10:05:{i:02d} TP0] Decode batch, #running-req: 1, #token: {1200 + 64 * i}, token usage: 0.01, "
    f"accept len: 1.60, accept rate: 0.80, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, \n"
    for i in range(6)
)


def check(tmp_path: Path, log: str, *args: str) -> tuple[int, dict, str]:
    path = tmp_path / "server.log"
    path.write_text(log, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "spectui", "check", "--json", str(path), *args],
                         capture_output=True, text=True, timeout=60)
    return out.returncode, json.loads(out.stdout) if out.stdout else {}, out.stderr


def by_rule(data: dict) -> dict[str, dict]:
    return {d["rule"]: d for d in data["diagnoses"]}


def test_seed_002_vllm_flag(tmp_path: Path) -> None:
    rc, data, _ = check(tmp_path, ARGPARSE_LOG)
    top = data["diagnoses"][0]
    assert rc == 1
    assert top["category"] == "unrecognized-argument"
    assert top["fix"] == {"set": {"--speculative-num-steps": "16", "--speculative-eagle-topk": "1",
                                  "--speculative-num-draft-tokens": "17"},
                          "unset": ["--num-speculative-tokens"]}


def test_seed_002_bare_assertion(tmp_path: Path) -> None:
    rc, data, _ = check(tmp_path, ASSERT_LOG, "--launch", SEED_LAUNCH)
    top = data["diagnoses"][0]
    assert rc == 1
    assert top["category"] == "invalid-argument"
    assert top["fix"]["set"] == {"--speculative-num-steps": "15"}
    # Without the launch command the fix still adds --speculative-num-steps.
    _, data, _ = check(tmp_path, ASSERT_LOG)
    assert "--speculative-num-steps" in data["diagnoses"][0]["fix"]["set"]


def test_seed_000_override_from_launch_and_server_args(tmp_path: Path) -> None:
    rc, data, _ = check(tmp_path, OVERRIDE_LOG, "--launch", SEED_LAUNCH + " --speculative-num-steps 1")
    rules = by_rule(data)
    assert rc == 1
    top = data["diagnoses"][0]
    assert top["rule"] == "SPEC003" and top["category"] == "silent-override"
    # #23 one voice: with decode lines the depth is the advisor's. No baseline: its modelled cost (the round
    # split with the prior step cost 0.147) makes E[L](k) / (1 + k c) best at k = 2 for accept len 1.60 (r 0.95).
    assert top["fix"] == {"set": {"--speculative-num-steps": "2", "--speculative-num-draft-tokens": "3"},
                          "unset": []}
    assert "accept len ceiling = steps + 1 = 2" in top["evidence"]
    assert "SPEC018" not in rules  # the launch is known: no "launch unknown" variant
    # With the seed's measured baseline (90 tok/s) no depth pays: SPEC003 and SPEC026 both turn it off.
    _, data, _ = check(tmp_path, OVERRIDE_LOG, "--launch", SEED_LAUNCH + " --speculative-num-steps 1",
                       "--baseline-tps", "90")
    rules = by_rule(data)
    off = ["--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
           "--speculative-eagle-topk", "--speculative-num-draft-tokens"]
    assert rules["SPEC003"]["fix"] == {"set": {}, "unset": off} == rules["SPEC026"]["fix"]


def test_seed_000_override_from_the_launch_alone(tmp_path: Path) -> None:
    # No warning line in the log (e.g. stderr went elsewhere): the --launch vs server_args= comparison.
    log = "\n".join(line for line in OVERRIDE_LOG.splitlines() if "adjusted" not in line) + "\n"
    _, data, _ = check(tmp_path, log, "--launch", SEED_LAUNCH + " --speculative-num-steps 1")
    top = data["diagnoses"][0]
    # the advisor's depth (#23, as above: accept len 1.60, no baseline -> steps 2, draft tokens 3)
    assert top["category"] == "silent-override"
    assert top["fix"]["set"] == {"--speculative-num-steps": "2", "--speculative-num-draft-tokens": "3"}


def test_seed_000_override_from_the_warning_line_alone(tmp_path: Path) -> None:
    rc, data, _ = check(tmp_path, OVERRIDE_LOG)
    cats = [(d["rule"], d["category"]) for d in data["diagnoses"]]
    assert ("SPEC018", "silent-override") in cats
    assert "ceiling = steps + 1 = 2" in " ".join(by_rule(data)["SPEC018"]["evidence"])
    assert rc == 0  # a warning: without the launch it may be SGLang's own default


def test_seed_000_slower_than_baseline(tmp_path: Path) -> None:
    _, data, _ = check(tmp_path, OVERRIDE_LOG, "--baseline-tps", "90",
                       "--launch", SEED_LAUNCH + " --speculative-num-steps 1")
    slow = by_rule(data)["SPEC026"]
    assert slow["category"] == "spec-slower-than-baseline"
    assert "0.63x the 90.0 tok/s baseline" in slow["message"]
    assert "alpha about 0.60" in slow["message"]


def test_user_rules_dir_and_a_broken_file(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.toml").write_text('''
id = "USER001"
title = "Overlap off"
category = "other"
severity = "warning"
diagnosis = "overlap off at line {m.line}"
explanation = "local policy"
[[match]]
kind = "log"
record = "warning"
contains = "Overlap scheduler is disabled"
''', encoding="utf-8")
    good = (rules / "mine.toml").read_text(encoding="utf-8")
    (rules / "broken.toml").write_text(good.replace("USER001", "USER002").replace("record =", "recrod ="),
                                       encoding="utf-8")
    rc, data, err = check(tmp_path, OVERRIDE_LOG, "--rules", str(rules))
    assert "USER001" in by_rule(data)
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"spectui check: {rules / 'broken.toml'}: rule USER002: field 'match.0.recrod'")
    assert "SPEC018" in by_rule(data)  # the built-in library still ran


def test_missing_rules_dir_is_a_usage_error(tmp_path: Path) -> None:
    rc, _, err = check(tmp_path, OVERRIDE_LOG, "--rules", str(tmp_path / "nope"))
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "not a directory" in err


def test_unparsable_launch_is_a_usage_error(tmp_path: Path) -> None:
    rc, _, err = check(tmp_path, OVERRIDE_LOG, "--launch", "python -m sglang.launch_server --model-path 'unclosed")
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "--launch" in err
