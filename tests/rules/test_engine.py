"""RuleEngine on records built directly: indexing, raise-once/update, launches, ordering, fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.log import (
    DecodeSample,
    ErrorEvent,
    Frame,
    LineContext,
    Milestone,
    MilestoneKind,
    WarningEvent,
)
from spectui.core.rules import Rule, RuleEngine, load_file
from spectui.core.rules import engine as rules
from spectui.core.rules import match as rule_match

CTX = LineContext()


@pytest.fixture
def make_rule(tmp_path: Path):
    """A compiled rule from TOML text written to a real file (the loader's own path)."""

    def make(text: str, name: str = "rule.toml") -> Rule:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        rule, error = load_file(path, name)
        assert error is None, error
        assert rule is not None
        return rule

    return make

WARN_RULE = '''
id = "TEST001"
title = "hello warning"
category = "other"
severity = "warning"
diagnosis = "saw hello {m.who}"
explanation = "x"
[[match]]
kind = "log"
record = "warning"
contains = "hello"
pattern = "hello (?P<who>\\\\w+)"
'''

CRASH_RULE = '''
id = "TEST002"
title = "any crash"
category = "crash"
severity = "error"
priority = 90
fallback = true
diagnosis = "{m.exc_type}: {m.message} in {m.frame}"
explanation = "x"
[[match]]
kind = "log"
record = "error"
'''

OOM_RULE = '''
id = "TEST003"
title = "oom"
category = "oom"
severity = "error"
priority = 20
diagnosis = "out of memory"
explanation = "x"
[[match]]
kind = "log"
record = "error"
contains = "out of memory"
'''

METRIC_RULE = '''
id = "TEST004"
title = "low accept"
category = "low-accept-length"
severity = "warning"
diagnosis = "accept len {accept_len:.2f}"
explanation = "x"
[[match]]
kind = "metric"
when = "accept_len < 1.3"
warmup = 1
min_samples = 3
'''


def decode(line: int, accept: float) -> DecodeSample:
    return DecodeSample(line=line, ctx=CTX, running_req=1, accept_len=accept, gen_tokens_per_s=50.0)


def error(line: int, exc: str, msg: str) -> ErrorEvent:
    return ErrorEvent(line=line, ctx=CTX, exc_type=exc, message=msg, end_line=line + 2,
                      frames=(Frame("/x/scheduler.py", 10, "run_batch"),))


def test_decode_samples_and_unrelated_warnings_never_reach_a_log_clause(make_rule, monkeypatch) -> None:
    calls = []
    real = rule_match.match_log
    monkeypatch.setattr(rules, "match_log", lambda *a: calls.append(a) or real(*a))
    engine = RuleEngine([make_rule(WARN_RULE)])
    engine.feed([decode(i, 2.0) for i in range(1, 1001)])
    engine.feed([WarningEvent(line=1001, ctx=CTX, text="unrelated text")])
    assert calls == []
    engine.feed([WarningEvent(line=1002, ctx=CTX, text="hello world")])
    assert len(calls) == 1
    assert [d.message for d in engine.diagnoses] == ["saw hello world"]


def test_raised_once_then_updated(make_rule) -> None:
    engine = RuleEngine([make_rule(WARN_RULE)])
    first = engine.feed([WarningEvent(line=5, ctx=CTX, text="hello a")])
    assert [(d.count, d.first_line, d.last_line) for d in first] == [(1, 5, 5)]
    assert engine.feed([WarningEvent(line=9, ctx=CTX, text="nothing")]) == []
    again = engine.feed([WarningEvent(line=12, ctx=CTX, text="hello b")])
    assert [(d.count, d.first_line, d.last_line, d.message) for d in again] == [(2, 5, 12, "saw hello b")]
    assert len(engine.diagnoses) == 1


def test_fallback_rule_steps_aside_for_a_specific_one(make_rule) -> None:
    engine = RuleEngine([make_rule(CRASH_RULE, "c.toml"), make_rule(OOM_RULE, "o.toml")])
    engine.feed([error(3, "RuntimeError", "CUDA error: out of memory")])
    assert [d.rule for d in engine.diagnoses] == ["TEST003"]
    engine.feed([error(30, "ValueError", "boom")])
    assert [d.rule for d in engine.diagnoses] == ["TEST003", "TEST002"]  # priority 20 before 90
    crash = engine.diagnoses[1]
    assert crash.message == "ValueError: boom in run_batch"
    assert crash.severity == "error" and crash.category == "crash"


def test_most_severe_first(make_rule) -> None:
    engine = RuleEngine([make_rule(WARN_RULE, "w.toml"), make_rule(CRASH_RULE, "c.toml")])
    engine.feed([WarningEvent(line=1, ctx=CTX, text="hello x"), error(2, "ValueError", "boom")])
    assert [d.severity for d in engine.diagnoses] == ["error", "warning"]


def test_metric_needs_min_samples_after_warmup(make_rule) -> None:
    engine = RuleEngine([make_rule(METRIC_RULE)])
    start = Milestone(line=1, ctx=CTX, kind=MilestoneKind.FIRED_UP, text="The server is fired up and ready to roll!")
    engine.feed([start, decode(2, 1.0), decode(3, 1.0), decode(4, 1.0)])
    assert engine.diagnoses == []  # the first sample after start-up is warm-up: only 2 count
    out = engine.feed([decode(5, 1.1)])
    assert [d.message for d in out] == ["accept len 1.03"]
    assert out[0].first_line == 3 and out[0].last_line == 5


def test_mid_run_log_has_no_warmup(make_rule) -> None:
    engine = RuleEngine([make_rule(METRIC_RULE)])
    engine.feed([decode(1, 1.0), decode(2, 1.0), decode(3, 1.0)])
    assert [d.rule for d in engine.diagnoses] == ["TEST004"]


def test_new_launch_clears_but_keeps_the_new_launchs_preamble(make_rule) -> None:
    engine = RuleEngine([make_rule(WARN_RULE, "w.toml"), make_rule(CRASH_RULE, "c.toml")])
    args = Milestone(line=1, ctx=CTX, kind=MilestoneKind.SERVER_ARGS, text="server_args=...", detail={})
    engine.feed([args, error(5, "ValueError", "old crash")])
    assert [d.rule for d in engine.diagnoses] == ["TEST002"]
    # The relaunch prints a bare resolution warning before its own server_args= line.
    engine.feed([WarningEvent(line=20, ctx=CTX, text="hello again"),
                 Milestone(line=21, ctx=CTX, kind=MilestoneKind.SERVER_ARGS, text="server_args=...", detail={})])
    assert [d.rule for d in engine.diagnoses] == ["TEST001"]
    engine.new_launch()  # what Pipeline calls: the boundary is after the old launch's last activity
    assert [d.first_line for d in engine.diagnoses] == [20]
    engine.new_launch(first_line=100)
    assert engine.diagnoses == []


def test_server_args_feed_config_rules(make_rule) -> None:
    rule = make_rule('''
id = "TEST005"
title = "mrr 48"
category = "silent-override"
severity = "info"
diagnosis = "max running {effective.max_running_requests}"
explanation = "x"
[[match]]
kind = "config"
when = "effective.max_running_requests == 48 and not defined(requested.max_running_requests)"
''')
    engine = RuleEngine([rule])
    assert engine.feed([WarningEvent(line=1, ctx=CTX, text="x")]) == []
    out = engine.feed([Milestone(line=2, ctx=CTX, kind=MilestoneKind.SERVER_ARGS, text="server_args=...",
                                 detail={"max_running_requests": 48})])
    assert [d.message for d in out] == ["max running 48"]
    assert out[0].evidence == ("flags: effective.max_running_requests = 48",)


def test_to_json_has_the_contract_fields(make_rule) -> None:
    engine = RuleEngine([make_rule(WARN_RULE)])
    engine.feed([WarningEvent(line=1, ctx=CTX, text="hello x")])
    data = engine.diagnoses[0].to_json()
    for key in ("rule", "category", "severity", "title", "evidence", "fix"):
        assert key in data
    assert data["fix"] is None and data["evidence"] == ["line 1: hello x"]


@pytest.mark.parametrize("version", ["0.5.4", "0.5.10"])
def test_version_gated_rules(make_rule, version: str) -> None:
    rule = make_rule(WARN_RULE.replace('severity = "warning"', 'severity = "warning"\nversions = "<=0.5.5"'))
    engine = RuleEngine([rule], version=version)
    engine.feed([WarningEvent(line=1, ctx=CTX, text="hello x")])
    assert bool(engine.diagnoses) == (version == "0.5.4")


def test_fallback_still_fires_when_the_specific_rule_does_not_hold(make_rule) -> None:
    # OOM_RULE's clause matches the record, but the rule also needs a config that is not there.
    gated = OOM_RULE.replace('contains = "out of memory"', 'contains = "out of memory"\n[[match]]\nkind = "config"\nwhen = "launch_known"')
    engine = RuleEngine([make_rule(CRASH_RULE, "c.toml"), make_rule(gated, "o.toml")])
    engine.feed([error(3, "RuntimeError", "CUDA error: out of memory")])
    assert [d.rule for d in engine.diagnoses] == ["TEST002"]


def test_drifting_metric_diagnosis_is_reported_at_a_bounded_rate(make_rule) -> None:
    engine = RuleEngine([make_rule(METRIC_RULE)])
    reported = []
    for i in range(1, 101):
        reported += engine.feed([decode(i, 1.0 + (i % 7) / 100)])
    assert 1 < len(reported) <= 100 // 20 + 1
    assert engine.diagnoses[0].last_line == 100  # the current diagnosis is always fresh


def test_config_diagnosis_seen_through_diagnoses_is_still_returned_by_feed(make_rule) -> None:
    rule = make_rule('''
id = "TEST006"
title = "pre-flight"
category = "other"
severity = "info"
diagnosis = "launch known"
explanation = "x"
[[match]]
kind = "config"
when = "launch_known"
''')
    engine = RuleEngine([rule], launch=_Launch())
    assert [d.rule for d in engine.diagnoses] == ["TEST006"]
    assert [d.rule for d in engine.feed([WarningEvent(line=1, ctx=CTX, text="x")])] == ["TEST006"]
    assert engine.feed([WarningEvent(line=2, ctx=CTX, text="y")]) == []


class _Launch:
    env: tuple = ()
    args: tuple = ("--model-path", "/m")
    sglang_args: tuple = ("--model-path", "/m")
