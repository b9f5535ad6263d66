"""`spectui rules list | explain | test` as a user runs them (subprocess, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"

GOOD = '''
id = "USER001"
title = "hello seen"
category = "other"
severity = "info"
diagnosis = "hello from {m.who}"
explanation = "local rule"
[[match]]
kind = "log"
record = "error"
contains = "hello"
pattern = "hello (?P<who>\\\\w+)"
[[examples]]
expect = "fire"
log = "RuntimeError: hello world"
text = "hello from world"
[[examples]]
expect = "no-fire"
log = "RuntimeError: goodbye"
'''


def spectui(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", "rules", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_list_json_has_every_rule_file() -> None:
    out = spectui("list", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    # every rule file; data files next to them (rules/_frames.toml) start with "_" and are not rules
    assert len(rows) == len([p for p in RULES_DIR.glob("*.toml") if not p.name.startswith("_")])
    ids = {r["id"] for r in rows}
    assert {"SPEC001", "SPEC002", "SPEC003"} <= ids
    assert all(r["examples"] >= 2 for r in rows)


def test_list_includes_the_user_rules_folder(tmp_path: Path) -> None:
    (tmp_path / "spectui" / "rules").mkdir(parents=True)
    (tmp_path / "spectui" / "rules" / "mine.toml").write_text(GOOD, encoding="utf-8")
    import os

    out = spectui("list", env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)})
    assert "USER001" in out.stdout and "hello seen" in out.stdout


def test_explain_shows_match_fix_and_why() -> None:
    out = spectui("explain", "spec003")
    assert out.returncode == 0
    assert "silent-override" in out.stdout
    assert "--speculative-num-steps = if(topk == 1, requested.speculative_num_draft_tokens - 1, none)" in out.stdout
    assert "why:" in out.stdout


def test_explain_unknown_id_is_one_line() -> None:
    out = spectui("explain", "SPEC99")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "no rule SPEC99" in out.stderr


def test_builtin_library_passes_its_own_examples() -> None:
    out = spectui("test", "--json")
    data = json.loads(out.stdout)
    assert out.returncode == 0, data["failed"]
    assert data["coverage"] == 1.0 and data["without_examples"] == [] and data["load_errors"] == []
    assert data["examples"] == data["passed"] >= 2 * data["rules"]


def test_user_dir_failures_and_coverage(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "wrong.toml").write_text(GOOD.replace("USER001", "USER002").replace('text = "hello from world"',
                                                                                    'text = "hello from mars"'),
                                         encoding="utf-8")
    bare = GOOD.split("[[examples]]")[0].replace("USER001", "USER003")
    (tmp_path / "bare.toml").write_text(bare, encoding="utf-8")
    (tmp_path / "typo.toml").write_text(GOOD.replace("USER001", "USER004").replace("contains =", "contians ="),
                                        encoding="utf-8")
    out = spectui("test", "--rules", str(tmp_path))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert any(line.startswith("FAIL  USER002 example 0") and "hello from mars" in line for line in lines)
    assert "FAIL  USER003: no [[examples]]" in lines
    assert any(line.startswith("LOAD  ") and "rule USER004: field 'match.0.contians'" in line for line in lines)
    assert lines[-1] == "3/4 examples pass; 2/3 rules have examples (67%); 1 files did not load"


def test_missing_dir_is_a_usage_error(tmp_path: Path) -> None:
    out = spectui("test", "--rules", str(tmp_path / "nope"))
    assert out.returncode == 2 and "not a directory" in out.stderr
