"""The incremental rule engine: records + metrics + launch flags -> diagnoses with evidence and flag fixes.

Hot path: records are dispatched by type to the log clauses registered for that type, and a clause's
literal substring is tested (one `in`) before any regex, so a decode sample never meets a warning regex;
decode samples only append to a small window that metric clauses aggregate once per batch. Each rule is
raised once per launch and then updated (count, last line); a new launch clears what the old one raised.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from spectui.core.log import DecodeSample, ErrorEvent, Milestone, MilestoneKind, Record
from spectui.core.rules import expr as ruleexpr
from spectui.core.rules.compile import CConfig, CGroup, CLog, CMetric, Rule, load_rules, version_matches
from spectui.core.rules.config import ConfigContext
from spectui.core.rules.depth import depth_metrics
from spectui.core.rules.match import RECORD_TYPE, DecodeWindow, match_draft, match_log, record_text, spec_math
from spectui.core.rules.vocab import METRIC_NAMES

__all__ = ["Diagnosis", "Fix", "Rule", "RuleEngine", "load_rules"]

_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_DEFAULT_WINDOW = CMetric(-1, ruleexpr.parse("true", lambda n: True), 0, 1, 40)
_ACTIVITY = (DecodeSample, ErrorEvent, Milestone)


@dataclass(frozen=True, slots=True)
class Fix:
    """A flag patch: flags (with leading dashes) to set to a value ("" = a flag without a value), and to drop."""

    set: Mapping[str, str]
    unset: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"set": dict(self.set), "unset": list(self.unset)}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    rule: str
    category: str
    severity: Literal["error", "warning", "info"]
    title: str
    evidence: tuple[str, ...]
    fix: Fix | None
    explanation: str
    links: tuple[str, ...]
    count: int
    first_line: int | None
    last_line: int | None
    message: str = ""  # the rule's diagnosis text with the evidence values filled in

    def to_json(self) -> dict[str, Any]:
        """The shape of `check --json` "diagnoses" (CONTRACTS.md), plus message/explanation/links/lines."""
        return {
            "rule": self.rule, "category": self.category, "severity": self.severity, "title": self.title,
            "message": self.message, "evidence": list(self.evidence),
            "fix": self.fix.to_json() if self.fix is not None else None,
            "explanation": self.explanation, "links": list(self.links), "count": self.count,
            "first_line": self.first_line, "last_line": self.last_line,
        }


@dataclass(slots=True)
class _Hit:
    count: int
    first_line: int
    last_line: int
    captures: dict[str, Any]
    first_text: str = ""  # what the first matching record said (evidence)
    # fallback rules only: (line, end, captures, rules that also matched the record) for recent records,
    # so a record another rule explains is dropped at evaluation time
    records: list[tuple[int, int, dict[str, Any], frozenset[str]]] = field(default_factory=list)


_MAX_FALLBACK_RECORDS = 64
_REPORT_EVERY = 20  # decode samples between reports of a metric diagnosis whose values drift


@dataclass(slots=True)
class _Outcome:
    ok: bool
    evidence: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


class _Env:
    """Name lookup for one rule evaluation: captures, then metric aggregates, then the config."""

    def __init__(self, config: ConfigContext) -> None:
        self.config = config
        self.captures: dict[str, Any] = {}
        self.agg: dict[str, Any] | None = None

    def __call__(self, name: str) -> Any:
        if name.startswith("m."):
            return self.captures.get(name[2:])
        if name in METRIC_NAMES:
            return None if self.agg is None else self.agg.get(name)
        return self.config.value(name)


class RuleEngine:
    def __init__(self, rules: Sequence[Rule], *, launch: Any = None, resolution: Any = None,
                 version: str | None = None, baseline_tps: float | None = None, draft: Sequence[Any] = ()) -> None:
        self._draft = list(draft)  # draft-checkpoint findings (core.draft), for draft clauses
        self._rules = [r for r in rules if r.versions is None or version is None
                       or version_matches(r.versions, version)]
        self._config = ConfigContext(launch=launch, resolution=resolution, version=version,
                                     baseline_tps=baseline_tps)
        # record type -> literal (None = always) -> [(rule, clause)]
        self._index: dict[type, dict[str | None, list[tuple[Rule, CLog]]]] = {}
        for rule in self._rules:
            for clause in rule.log_clauses:
                for rtype, name in RECORD_TYPE.items():
                    if name == clause.record:
                        self._index.setdefault(rtype, defaultdict(list))[clause.contains].append((rule, clause))
        self._metric_rules = [r for r in self._rules if r.metric_clauses]
        # Rules whose fix alternatives are chosen by a `when` (SPEC003: the advisor's depth once decode lines
        # exist): a raised one is judged again with every new window, so its fix follows the measurements.
        self._window_fix_rules = [r for r in self._rules if not r.metric_clauses and any(f.when is not None
                                                                                       for f in r.fixes)]
        self._config_rules = [r for r in self._rules if r.has_config]
        maxlen = max([c.window + c.warmup for r in self._metric_rules for c in r.metric_clauses] + [64])
        self._window = DecodeWindow(maxlen)
        self._hits: dict[str, dict[int, _Hit]] = defaultdict(dict)
        self._current: dict[str, Diagnosis] = {}
        self._reported_at: dict[str, int] = {}  # rule -> window.count when last returned by feed()
        self._pending: list[Diagnosis] = []  # raised while answering .diagnoses, not yet returned
        self._config_dirty = True
        self._launch_open = False  # a launch has shown activity (so the next server_args= starts another)
        self._last_activity = 0
        self._stage = ""  # last start-up milestone kind of this launch, or "serving" (m.stage)

    @property
    def rules(self) -> list[Rule]:
        return list(self._rules)

    @property
    def diagnoses(self) -> list[Diagnosis]:
        """Current diagnoses, most severe first (then root causes before consequences, then by line).

        Config-only rules are evaluated here too, so a launch without any log (pre-flight) is judged."""
        if self._config_dirty:
            raised = self.feed(())
            self._pending.extend(raised)  # still reported by the next feed() (watch events)
        prio = {r.id: r.priority for r in self._rules}
        return sorted(self._current.values(), key=lambda d: (
            _SEVERITY_RANK[d.severity], prio.get(d.rule, 50), d.first_line or 0))

    def set_process_gone(self, gone: bool = True) -> None:
        """The followed server's process is gone (a liveness probe saw it): config rules read `process_gone`."""
        if self._config.process_gone != gone:
            self._config.process_gone, self._config_dirty = gone, True

    def set_draft(self, findings: Sequence[Any]) -> None:
        """The draft inspector's findings (core.draft.Finding or dicts) for rules with draft clauses."""
        self._draft, self._config_dirty = list(findings), True

    def new_launch(self, first_line: int | None = None) -> None:
        """A relaunch: clear diagnoses raised before `first_line` and the launch state.

        Without `first_line`, the boundary is just after the old launch's last activity (decode, error,
        milestone): bare resolution warnings print before the new launch's `server_args=` line and
        belong to the new launch.
        """
        boundary = first_line if first_line is not None else self._last_activity + 1
        if not self._window.spec_seen and self._window.count >= 3:
            self._config.baseline_measured = self._window.mean_tps()
        self._window.clear()
        self._reported_at.clear()
        self._config.clear_launch()
        self._config_dirty = True
        for rule_id in list(self._hits):
            hits = {k: h for k, h in self._hits[rule_id].items() if h.first_line >= boundary}
            if hits:
                self._hits[rule_id] = hits
            else:
                del self._hits[rule_id]
        self._current = {k: d for k, d in self._current.items()
                         if d.first_line is not None and d.first_line >= boundary}
        self._launch_open = False
        self._stage = ""

    def feed(self, records: Sequence[Record], snapshot: Any = None) -> list[Diagnosis]:
        """Process a batch; returns the diagnoses raised or changed by it."""
        touched: set[str] = set()
        decode_seen = False
        index = self._index
        for record in records:
            rtype = type(record)
            if rtype is DecodeSample:
                self._window.add(record)  # type: ignore[arg-type]
                decode_seen = True
                self._stage = "serving"
            elif rtype is Milestone:
                self._milestone(record)  # type: ignore[arg-type]
            if isinstance(record, _ACTIVITY) and not (
                    rtype is Milestone and record.kind == MilestoneKind.SERVER_ARGS):  # type: ignore[union-attr]
                self._launch_open = True
                self._last_activity = getattr(record, "end_line", 0) or record.line
            groups = index.get(rtype)
            if groups:
                self._dispatch(record, groups, touched)
        if snapshot is not None and getattr(snapshot, "server_args", None) and self._config.server_args is None:
            self._config.set_server_args(snapshot.server_args)
            self._config_dirty = True
        todo = {r.id: r for r in self._rules if r.id in touched}
        if decode_seen:
            todo.update((r.id, r) for r in self._metric_rules)
            todo.update((r.id, r) for r in self._window_fix_rules if r.id in self._current)
        if self._config_dirty:
            todo.update((r.id, r) for r in self._config_rules)
            self._config_dirty = False
        changed, self._pending = self._pending, []
        cache: dict[tuple[int, int, int], dict[str, Any] | None] = {}
        # Specific rules first: a fallback rule then ignores records a raised specific rule explains.
        for rule in sorted(todo.values(), key=lambda r: r.fallback):
            diag = self._evaluate(rule, cache)
            if diag is None and rule.fallback:
                self._current.pop(rule.id, None)
            previous = self._current.get(rule.id)
            if diag is not None and previous != diag:
                self._current[rule.id] = diag
                if self._worth_reporting(previous, diag):
                    changed.append(diag)
        return changed

    def _worth_reporting(self, previous: Diagnosis | None, diag: Diagnosis) -> bool:
        """New, a new matching record, or a new fix: report. A metric value drifting: every 20 samples."""
        if previous is None or (previous.count, previous.fix) != (diag.count, diag.fix):
            self._reported_at[diag.rule] = self._window.count
            return True
        if self._window.count - self._reported_at.get(diag.rule, 0) >= _REPORT_EVERY:
            self._reported_at[diag.rule] = self._window.count
            return True
        return False

    def _effective_hits(self, rule: Rule) -> dict[int, _Hit]:
        hits = self._hits.get(rule.id, {})
        if not rule.fallback:
            return hits
        out: dict[int, _Hit] = {}
        for key, hit in hits.items():
            left = [r for r in hit.records if not (r[3] and any(i in self._current for i in r[3]))]
            if left:
                out[key] = _Hit(len(left), left[0][0], left[-1][1], left[-1][2], str(left[0][2].get("text", "")))
        return out

    def _milestone(self, record: Milestone) -> None:
        if record.kind == MilestoneKind.SERVER_ARGS:
            if self._launch_open:
                self.new_launch(self._last_activity + 1)
            if record.detail:
                self._config.set_server_args(record.detail)
            self._config_dirty = True
        elif record.kind == MilestoneKind.WEIGHTS_LOADED and self._config.target_arch is None:
            self._config.target_arch = record.detail.get("type")
            self._config_dirty = True
        elif record.kind == MilestoneKind.DRAFT_WEIGHTS_LOADED and self._config.draft_arch is None:
            self._config.draft_arch = record.detail.get("type")
            self._config_dirty = True
        if record.kind != MilestoneKind.SHUTDOWN:
            self._window.start_seen = True
        if self._stage != "serving" or record.kind == MilestoneKind.SERVER_ARGS:
            self._stage = str(record.kind)

    def _dispatch(self, record: Record, groups: Mapping[str | None, list[tuple[Rule, CLog]]],
                  touched: set[str]) -> None:
        text = record_text(record)
        found: list[tuple[Rule, CLog, dict[str, Any]]] = []
        for literal, clauses in groups.items():
            if literal is not None and literal not in text:
                continue
            for rule, clause in clauses:
                captures = match_log(clause, record, text)
                if captures is not None:
                    captures["stage"] = self._stage
                    captures["when"] = _when(self._stage)
                    found.append((rule, clause, captures))
        specific = frozenset(rule.id for rule, _, _ in found if not rule.fallback)
        end = getattr(record, "end_line", 0) or record.line
        for rule, clause, captures in found:
            hit = self._hits[rule.id].get(clause.key)
            if hit is None:
                hit = self._hits[rule.id][clause.key] = _Hit(1, record.line, end, captures,
                                                             str(captures.get("text", "")))
            else:
                hit.count += 1
                hit.last_line = end
                hit.captures = captures
            if rule.fallback:
                hit.records.append((record.line, end, captures, specific))
                del hit.records[:-_MAX_FALLBACK_RECORDS]
            touched.add(rule.id)

    def _aggregates(self, clause: CMetric, cache: dict[tuple[int, int, int], dict[str, Any] | None]
                    ) -> dict[str, Any] | None:
        key = (clause.warmup, clause.window, clause.min_samples)
        if key not in cache:
            agg = self._window.aggregates(clause)
            if agg is not None:
                cfg = self._config
                agg.update(spec_math(agg, cfg.value("steps"), cfg.value("draft_tokens"), cfg.value("baseline_tps")))
                agg.update(depth_metrics(agg, cfg.value("algorithm"), cfg.value("steps"), cfg.value("topk"),
                                         cfg.value("draft_tokens"), agg.get("running_req")))
            cache[key] = agg
        return cache[key]

    def _evaluate(self, rule: Rule, cache: dict[tuple[int, int, int], dict[str, Any] | None]) -> Diagnosis | None:
        env = _Env(self._config)
        hits = self._effective_hits(rule)
        for clause in rule.log_clauses:
            if clause.key in hits:
                env.captures.update(hits[clause.key].captures)
        outcome = self._node(rule.root, rule, env, hits, cache)
        if not outcome.ok:
            return None
        if env.agg is None:
            env.agg = self._aggregates(_DEFAULT_WINDOW, cache)
        message = next((t for t in (tpl.render(env) for tpl in rule.diagnosis) if t is not None), None)
        if message is None:
            message = rule.diagnosis[-1].render(lambda n: "?" if env(n) is None else env(n)) or ""
        evidence = list(dict.fromkeys(outcome.evidence + [t for t in (tpl.render(env) for tpl in rule.evidence) if t]))
        count = max((h.count for h in hits.values()), default=1)
        previous = self._current.get(rule.id)
        lines = outcome.lines or ([previous.first_line] if previous and previous.first_line else [])
        first = min(lines) if lines else None
        if previous is not None and previous.first_line is not None:
            first = min(previous.first_line, first or previous.first_line)
        return Diagnosis(
            rule=rule.id, category=rule.category, severity=rule.severity,  # type: ignore[arg-type]
            title=rule.title, evidence=tuple(evidence), fix=self._fix(rule, env),
            explanation=rule.explanation, links=rule.links, count=count,
            first_line=first, last_line=max(lines) if lines else None, message=message,
        )

    def _fix(self, rule: Rule, env: _Env) -> Fix | None:
        for spec in rule.fixes:
            if spec.when is not None:
                ok, holds = spec.when.try_evaluate(env)
                if not (ok and holds):
                    continue
            values: dict[str, str] = {}
            for flag, expr in spec.set:
                ok, value = expr.try_evaluate(env)
                if not ok or value is None:
                    break
                values[flag] = ruleexpr.render_value(value)
            else:
                return Fix(values, spec.unset)
        return None

    def _node(self, node: Any, rule: Rule, env: _Env, hits: Mapping[int, _Hit],
              cache: dict[tuple[int, int, int], dict[str, Any] | None]) -> _Outcome:
        if isinstance(node, CGroup):
            parts = [self._node(child, rule, env, hits, cache) for child in node.of]
            if node.kind == "none":
                return _Outcome(not any(p.ok for p in parts))
            ok = all(p.ok for p in parts) if node.kind == "all" else any(p.ok for p in parts)
            good = [p for p in parts if p.ok]
            return _Outcome(ok, [e for p in good for e in p.evidence], [n for p in good for n in p.lines])
        if isinstance(node, CLog):
            hit = hits.get(node.key)
            if hit is None:
                return _Outcome(False)
            more = f" (x{hit.count}, last at line {hit.last_line})" if hit.count > 1 else ""
            return _Outcome(True, [f"line {hit.first_line}: {hit.first_text}{more}"],
                            [hit.first_line, hit.last_line])
        if isinstance(node, CMetric):
            agg = self._aggregates(node, cache)
            if agg is None:
                return _Outcome(False)
            env.agg = agg
            ok, value = node.when.try_evaluate(env)
            if not (ok and value):
                return _Outcome(False)
            shown = ", ".join(f"{n} {_show(env(n))}" for n in sorted(node.when.names) if env(n) is not None)
            return _Outcome(True, [f"decode lines {agg['first_line']}-{agg['last_line']} "
                                   f"({agg['samples']} samples): {shown}"], [agg["first_line"], agg["last_line"]])
        if not isinstance(node, CConfig):  # a draft clause (compile.CDraft)
            found = match_draft(node, self._draft)
            if found is None:
                return _Outcome(False)
            env.captures.update(found)
            return _Outcome(True, [f"draft checkpoint: {found['finding']}", *found.pop("_evidence")])
        assert isinstance(node, CConfig)
        ok, value = node.when.try_evaluate(env)
        if not (ok and value):
            return _Outcome(False)
        shown = ", ".join(f"{n} = {_show(env(n))}" for n in sorted(node.when.names) if env(n) is not None)
        return _Outcome(True, [f"flags: {shown}"] if shown else [])


def _when(stage: str) -> str:
    if stage == "serving":
        return "while serving"
    if stage:
        return f"during start-up (after {stage})"
    return "(stage not in the log)"


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def default_rule_dirs(config_home: str | None) -> list[Path]:
    """The user rules folder ($XDG_CONFIG_HOME/spectui/rules) when it exists."""
    if not config_home:
        return []
    path = Path(config_home) / "spectui" / "rules"
    return [path] if path.is_dir() else []
