"""The compiled-rule cache behind `spectui check`: a hit skips pydantic, any rule change is seen, bad caches are ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from spectui.commands.check.rules import load_rules_cached
from spectui.core.rules import load_rules

RULE = '''id = "USR001"
title = "{title}"
category = "other"
severity = "warning"
diagnosis = "a user rule"
explanation = "For the cache test."
[[match]]
kind = "log"
record = "warning"
contains = "cache-test"
'''


def summary(rules: list) -> list[tuple]:
    return sorted((r.id, r.title, r.category, r.severity, r.explanation, r.fixes, r.path) for r in rules)


def test_second_load_comes_from_the_cache_without_pydantic(tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from spectui.commands.check.rules import load_rules_cached\n"
        "rules, errors = load_rules_cached([], Path(sys.argv[1]))\n"
        "print(json.dumps({'pydantic': 'pydantic' in sys.modules, 'ids': sorted(r.id for r in rules)}))\n"
    )
    runs = [json.loads(subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                                      text=True, check=True, timeout=60).stdout) for _ in range(2)]
    assert runs[0]["pydantic"] is True  # the first run reads the TOML files through the schema
    assert runs[1]["pydantic"] is False  # the second one only unpickles compiled rules
    assert runs[0]["ids"] == runs[1]["ids"] == sorted(r.id for r in load_rules()[0])
    assert len(list(tmp_path.glob("rules-*.pickle"))) == 1


def test_cached_rules_equal_freshly_loaded_ones(tmp_path: Path) -> None:
    load_rules_cached([], tmp_path)
    cached, errors = load_rules_cached([], tmp_path)
    fresh, fresh_errors = load_rules()
    assert summary(cached) == summary(fresh) and errors == fresh_errors


def test_an_edited_user_rule_is_seen_at_once(tmp_path: Path) -> None:
    user = tmp_path / "rules"
    user.mkdir()
    rule = user / "USR001.toml"
    rule.write_text(RULE.format(title="first title"))
    cache = tmp_path / "cache"
    assert "first title" in [r.title for r in load_rules_cached([user], cache)[0]]
    rule.write_text(RULE.format(title="second, longer title"))
    st = rule.stat()
    os.utime(rule, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # even on a coarse-mtime filesystem
    titles = [r.title for r in load_rules_cached([user], cache)[0]]
    assert "second, longer title" in titles and "first title" not in titles
    (user / "BAD.toml").write_text('id = "USR002"\n')  # a new, broken file: reported, the others load
    rules, errors = load_rules_cached([user], cache)
    assert any("USR002" in e for e in errors) and "USR001" in {r.id for r in rules}


def test_corrupt_or_unwritable_cache_is_ignored(tmp_path: Path) -> None:
    load_rules_cached([], tmp_path)
    (cache_file,) = tmp_path.glob("rules-*.pickle")
    cache_file.write_bytes(b"not a pickle")
    assert summary(load_rules_cached([], tmp_path)[0]) == summary(load_rules()[0])
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    assert summary(load_rules_cached([], blocked / "spectui")[0]) == summary(load_rules()[0])


def test_check_gives_the_same_json_from_the_cache(tmp_path: Path) -> None:
    from test_check_cli import SEED_LAUNCH, SEED_LOG  # same directory (pytest puts it on sys.path)

    log = tmp_path / "server.log"
    log.write_text(SEED_LOG)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    outs = [subprocess.run([sys.executable, "-m", "spectui", "check", "--json", str(log), "--launch", SEED_LAUNCH],
                           capture_output=True, text=True, env=env, timeout=60) for _ in range(2)]
    assert list((tmp_path / "cache" / "spectui").glob("rules-*.pickle"))
    first, second = (json.loads(o.stdout) for o in outs)
    assert first == second
    assert "SPEC003" in [d["rule"] for d in second["diagnoses"]]


def test_a_planted_cache_file_cannot_run_code(tmp_path) -> None:
    """Rules never run code, and neither may their cache: a pickle that calls os.system is refused."""
    import os
    import pickle

    from spectui.commands.check.rules import cache_key, load_rules_cached

    load_rules_cached((), cache_dir=tmp_path)  # writes the real cache
    (cache_file,) = tmp_path.glob("rules-*.pickle")
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, (f"touch {marker}",))

    cache_file.write_bytes(pickle.dumps((cache_key(()), [Evil()], [])))
    rules, errors = load_rules_cached((), cache_dir=tmp_path)
    assert not marker.exists()
    assert rules and errors == []  # loaded from the rule files instead
