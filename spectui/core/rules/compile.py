"""Rule files -> compiled rules: TOML parse, schema check, regex/expression/placeholder compile, one-line errors.

A file that does not load yields one line naming the file, the rule id and the field; the others load.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spectui.core.log import MilestoneKind
from spectui.core.rules import expr as ruleexpr
from spectui.core.rules.vocab import in_vocabulary
from spectui.core.versions import version_tuple

if TYPE_CHECKING:  # the pydantic schema is imported only when rule files are read (not for cached rules)
    from spectui.core.rules.schema import Example, RuleModel

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}:]+)(?::([^{}]*))?\}")


@dataclass(frozen=True, slots=True)
class Template:
    """A text with {expr} / {expr:.2f} placeholders; renders to None if any has no value."""

    source: str
    parts: tuple[tuple[str, ruleexpr.Expr | None, str], ...]  # (literal before, expression, format spec)

    def render(self, env: Any) -> str | None:
        out: list[str] = []
        for literal, expr, spec in self.parts:
            out.append(literal)
            if expr is None:
                continue
            ok, value = expr.try_evaluate(env)
            if not ok or value is None:
                return None
            out.append(_format(value, spec))
        return "".join(out)


def _format(value: Any, spec: str) -> str:
    if isinstance(value, float) and not spec:
        return f"{value:.2f}".rstrip("0").rstrip(".") if not value.is_integer() else str(int(value))
    try:
        return format(value, spec)
    except (ValueError, TypeError):
        return str(value)


@dataclass(frozen=True, slots=True)
class CLog:
    key: int
    record: str
    contains: str | None
    pattern: re.Pattern[str] | None
    exc_types: frozenset[str] | None
    message: re.Pattern[str] | None
    frame: re.Pattern[str] | None
    frame_file: re.Pattern[str] | None
    milestone: str | None
    exclude: re.Pattern[str] | None
    source: re.Pattern[str] | None
    subsystems: frozenset[str] | None = None
    through: frozenset[str] | None = None
    outside: frozenset[str] | None = None
    catalogue: Any = None  # messages.CatalogueRef: SGLang's own texts this clause stands for


@dataclass(frozen=True, slots=True)
class CMetric:
    key: int
    when: ruleexpr.Expr
    warmup: int
    min_samples: int
    window: int


@dataclass(frozen=True, slots=True)
class CConfig:
    key: int
    when: ruleexpr.Expr


@dataclass(frozen=True, slots=True)
class CDraft:
    key: int
    codes: frozenset[str] | None
    categories: frozenset[str] | None
    severities: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class CGroup:
    kind: str
    of: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class CFix:
    set: tuple[tuple[str, ruleexpr.Expr], ...]
    unset: tuple[str, ...]
    when: ruleexpr.Expr | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled rule, ready for the engine."""

    id: str
    title: str
    category: str
    severity: str
    priority: int
    fallback: bool
    versions: str | None
    root: CGroup
    diagnosis: tuple[Template, ...]
    evidence: tuple[Template, ...]
    fixes: tuple[CFix, ...]
    explanation: str
    links: tuple[str, ...]
    examples: tuple[Example, ...]
    path: str
    log_clauses: tuple[CLog, ...]
    metric_clauses: tuple[CMetric, ...]
    has_config: bool


class RuleLoadError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def compile_rule(model: RuleModel, path: str = "<memory>") -> Rule:
    """Compile a validated model; raises RuleLoadError(field, message) on a bad regex/expression/name."""
    from spectui.core.rules.schema import ConfigClause, DraftClause, GroupClause, LogClause, MetricClause

    captures = frozenset(_capture_names(model.match))
    counter = iter(range(10_000))
    logs: list[CLog] = []
    metrics: list[CMetric] = []
    has_config = False

    def vocab(name: str) -> bool:
        return in_vocabulary(name, captures)

    def build(clause: Any, field: str) -> Any:
        nonlocal has_config
        if isinstance(clause, GroupClause):
            return CGroup(clause.kind, tuple(build(c, f"{field}.of.{i}") for i, c in enumerate(clause.of)))
        if isinstance(clause, LogClause):
            if clause.milestone is not None and clause.milestone not in {k.value for k in MilestoneKind}:
                raise RuleLoadError(f"{field}.milestone", f"unknown milestone kind {clause.milestone!r}")
            if clause.record in ("decode", "prefill", "warning") and clause.contains is None:
                # These records can come by the thousand: a literal keeps regexes off the hot path.
                raise RuleLoadError(f"{field}.contains", f"{clause.record} log clauses need a literal 'contains'")
            c = CLog(
                next(counter), clause.record, clause.contains,
                _regex(clause.pattern, f"{field}.pattern"),
                frozenset(clause.exc_type) if clause.exc_type else None,
                _regex(clause.message, f"{field}.message"),
                _regex(clause.frame, f"{field}.frame"),
                _regex(clause.frame_file, f"{field}.frame_file"),
                clause.milestone,
                _regex(clause.exclude, f"{field}.exclude"),
                _regex(clause.source, f"{field}.source"),
                _subsystems(clause.subsystem, f"{field}.subsystem"),
                _subsystems(clause.through, f"{field}.through"),
                _subsystems(clause.outside, f"{field}.outside"),
                _catalogue(clause.catalogue, f"{field}.catalogue"),
            )
            logs.append(c)
            return c
        if isinstance(clause, MetricClause):
            m = CMetric(next(counter), _expr(clause.when, f"{field}.when", vocab), clause.warmup,
                        clause.min_samples, clause.window)
            metrics.append(m)
            return m
        if isinstance(clause, DraftClause):  # judged with the config: when findings are given
            has_config = True
            return CDraft(next(counter), *(frozenset(v) if v else None
                                           for v in (clause.code, clause.category, clause.severity)))
        assert isinstance(clause, ConfigClause)
        has_config = True
        return CConfig(next(counter), _expr(clause.when, f"{field}.when", vocab))

    root = CGroup(model.mode, tuple(build(c, f"match.{i}") for i, c in enumerate(model.match)))
    diagnosis = [model.diagnosis] if isinstance(model.diagnosis, str) else model.diagnosis
    if not diagnosis:
        raise RuleLoadError("diagnosis", "needs at least one text")
    fixes = []
    for i, fix in enumerate(model.fix):
        sets = []
        for flag, source in fix.set.items():
            if not flag.startswith("--"):
                raise RuleLoadError(f"fix.{i}.set", f"flag {flag!r} must be written with its leading dashes")
            sets.append((flag, _expr(source, f"fix.{i}.set.{flag}", vocab)))
        for flag in fix.unset:
            if not flag.startswith("--"):
                raise RuleLoadError(f"fix.{i}.unset", f"flag {flag!r} must be written with its leading dashes")
        when = _expr(fix.when, f"fix.{i}.when", vocab) if fix.when is not None else None
        fixes.append(CFix(tuple(sets), tuple(fix.unset), when))
    if model.versions is not None:
        try:
            version_matches(model.versions, "0.5.6")
        except ValueError as exc:
            raise RuleLoadError("versions", str(exc)) from None
    return Rule(
        id=model.id, title=model.title, category=model.category, severity=model.severity,
        priority=model.priority, fallback=model.fallback, versions=model.versions, root=root,
        diagnosis=tuple(_template(t, f"diagnosis.{i}", vocab) for i, t in enumerate(diagnosis)),
        evidence=tuple(_template(t, f"evidence.{i}", vocab) for i, t in enumerate(model.evidence)),
        fixes=tuple(fixes), explanation=" ".join(model.explanation.split()), links=tuple(model.links),
        examples=tuple(model.examples), path=path, log_clauses=tuple(logs),
        metric_clauses=tuple(metrics), has_config=has_config,
    )


def _capture_names(clauses: Iterable[Any]) -> Iterable[str]:
    from spectui.core.rules.schema import GroupClause, LogClause

    for clause in clauses:
        if isinstance(clause, GroupClause):
            yield from _capture_names(clause.of)
        elif isinstance(clause, LogClause):
            for source in (clause.pattern, clause.message, clause.source):
                if source:
                    with contextlib.suppress(re.error):  # reported by _regex with its field name
                        yield from re.compile(source).groupindex


def _subsystems(ids: list[str] | None, field: str) -> frozenset[str] | None:
    if not ids:
        return None
    from spectui.core.rules.frames import FrameMapError, subsystem_ids

    try:
        known = subsystem_ids()
    except (OSError, FrameMapError) as exc:
        raise RuleLoadError(field, f"the frame map does not load: {exc}") from None
    unknown = sorted(set(ids) - known)
    if unknown:
        raise RuleLoadError(field, f"unknown subsystem {unknown[0]!r} (rules/_frames.toml has: {', '.join(sorted(known))})")
    return frozenset(ids)


def _catalogue(refs: list[str] | None, field: str) -> Any:
    if not refs:
        return None
    from spectui.core.rules.messages import CatalogueError, compile_refs

    try:
        return compile_refs(refs)
    except CatalogueError as exc:
        raise RuleLoadError(field, str(exc)) from None


def _regex(source: str | None, field: str) -> re.Pattern[str] | None:
    if source is None:
        return None
    try:
        return re.compile(source)
    except re.error as exc:
        raise RuleLoadError(field, f"bad regex: {exc}") from None


def _expr(source: str, field: str, vocab: Any) -> ruleexpr.Expr:
    try:
        return ruleexpr.parse(source, vocab)
    except ruleexpr.ExprError as exc:
        raise RuleLoadError(field, str(exc)) from None


def _template(source: str, field: str, vocab: Any) -> Template:
    parts: list[tuple[str, ruleexpr.Expr | None, str]] = []
    pos = 0
    literal = ""
    for m in _PLACEHOLDER.finditer(source):
        literal += source[pos:m.start()]
        pos = m.end()
        token = m.group(0)
        if token in ("{{", "}}"):
            literal += token[0]
            continue
        try:
            expr = ruleexpr.parse(m.group(1).strip(), vocab)
        except ruleexpr.ExprError as exc:
            raise RuleLoadError(field, f"placeholder {{{m.group(1)}}}: {exc}") from None
        parts.append((literal, expr, m.group(2) or ""))
        literal = ""
    parts.append((literal + source[pos:], None, ""))
    return Template(source, tuple(parts))


def version_matches(spec: str, version: str) -> bool:
    """">=0.5.10", "<=0.5.10", ">0.5", "<0.5.12", "==0.5.4", "0.4.9..0.5.10" (inclusive)."""
    v = version_tuple(version)
    spec = spec.strip()
    if ".." in spec:
        lo, hi = spec.split("..", 1)
        return version_tuple(lo) <= v <= version_tuple(hi)
    m = re.fullmatch(r"(>=|<=|==|>|<)\s*(\d+(?:\.\d+){0,2}\S*)", spec)
    if m is None:
        raise ValueError(f"bad version range {spec!r} (use >=X, <=X, >X, <X, ==X or X..Y)")
    op, bound = m.group(1), version_tuple(m.group(2))
    return {">=": v >= bound, "<=": v <= bound, "==": v == bound, ">": v > bound, "<": v < bound}[op]


def load_file(path: Path | Any, label: str) -> tuple[Rule | None, str | None]:
    """Load one rule file; (rule, None) or (None, one-line error naming file, rule id and field)."""
    import tomllib

    from pydantic import ValidationError

    from spectui.core.rules.schema import RuleModel

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{label}: cannot read: {exc}"
    id_match = re.search(r'^\s*id\s*=\s*["\']([^"\']*)["\']', text, re.M)
    rule_id = id_match.group(1) if id_match else "?"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, f"{label}: rule {rule_id}: TOML syntax error: {exc}"
    try:
        model = RuleModel.model_validate(data)
    except ValidationError as exc:
        # A typo shows up twice (unknown key + missing field): name the unknown key, it is the typo.
        err = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        field = _field_path(err["loc"])
        extra = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = err["msg"]
        if err["type"] in ("union_tag_not_found", "union_tag_invalid"):
            msg = "needs kind = one of log, metric, config, draft, all, any, none"
        return None, f"{label}: rule {rule_id}: field '{field}': {msg}{extra}"
    try:
        return compile_rule(model, label), None
    except RuleLoadError as exc:
        return None, f"{label}: rule {model.id}: field '{exc.field}': {exc}"


def _field_path(loc: tuple[Any, ...]) -> str:
    """pydantic's loc without the discriminator tags it inserts after match.N / of.N."""
    out: list[str] = []
    for i, part in enumerate(loc):
        if (i >= 2 and isinstance(loc[i - 1], int) and loc[i - 2] in ("match", "of")
                and part in ("log", "metric", "config", "draft", "all", "any", "none")):
            continue
        out.append(str(part))
    return ".".join(out) or "?"


def is_rule_file(name: str) -> bool:
    """`*.toml`, except data files next to the rules (`_frames.toml`: names starting with "_")."""
    return name.endswith(".toml") and not name.startswith("_")


def load_rules(extra_dirs: Sequence[Path] = ()) -> tuple[list[Rule], list[str]]:
    """The built-in library plus every *.toml in `extra_dirs` (later ones replace a rule with the same id)."""
    errors: list[str] = []
    by_id: dict[str, Rule] = {}
    sources: list[tuple[str, list[tuple[Any, str]]]] = []
    builtin = resources.files("spectui.builtin_rules")
    sources.append(("builtin", sorted(((p, f"rules/{p.name}") for p in builtin.iterdir() if is_rule_file(p.name)), key=lambda t: t[1])))
    for directory in extra_dirs:
        d = Path(directory)
        if not d.is_dir():
            errors.append(f"{d}: not a directory of rule files")
            continue
        sources.append((str(d), [(p, str(p)) for p in sorted(d.glob("*.toml")) if is_rule_file(p.name)]))
    for origin, files in sources:
        seen_here: dict[str, str] = {}
        for path, label in files:
            rule, error = load_file(path, label)
            if error:
                errors.append(error)
                continue
            assert rule is not None
            if rule.id in seen_here:
                errors.append(f"{label}: rule {rule.id}: field 'id': duplicate of {seen_here[rule.id]}")
                continue
            seen_here[rule.id] = label
            by_id[rule.id] = rule
        del origin
    return list(by_id.values()), errors
