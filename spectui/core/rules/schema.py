"""The rule file format (one TOML file per rule): strict pydantic models and the fixed name vocabulary.

A rule is data, never code: regexes, literal substrings and expressions in spectui.core.rules.expr's tiny
language, all checked when the file loads. Unknown keys are errors (extra="forbid").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The vocabulary lives in rule_vocab (no pydantic); re-exported here for existing importers.
from spectui.core.rules.vocab import (  # noqa: F401
    CAPTURE_NAMES,
    CATEGORIES,
    CONFIG_NAMES,
    METRIC_NAMES,
    Category,
    RecordType,
    Severity,
    in_vocabulary,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LogClause(_Strict):
    """A record the log must contain. `contains` is a literal the engine indexes on (cheap `in` test)."""

    kind: Literal["log"]
    record: RecordType
    contains: str | None = None  # literal substring of the record's text; strongly preferred
    pattern: str | None = None  # regex searched in the text; named groups become m.<name>
    exc_type: list[str] | None = None  # error records: exact type, or its last dotted part
    message: str | None = None  # regex on the exception message ("^$" = bare)
    frame: str | None = None  # regex that some frame's function name must fully match
    frame_file: str | None = None  # regex searched in some frame's file path
    milestone: str | None = None  # milestone kind (records.MilestoneKind value)
    source: str | None = None  # regex searched in the innermost frame's source line (what raised)
    exclude: str | None = None  # regex: a record whose text matches it does not count
    # error records, judged by their frames (rules/_frames.toml): the innermost frame that maps to a subsystem
    # is one of `subsystem`; some frame maps to one of `through`. Work without the exception line.
    subsystem: list[str] | None = None
    through: list[str] | None = None
    outside: list[str] | None = None  # no frame maps to any of these (e.g. an OOM not in weight loading)
    # SGLang's own texts (spectui/data/messages): message ids or families (a fragment of SGLang's text: every
    # message containing it); the record's text must match one of them, in any release's wording.
    catalogue: list[str] | None = None


class MetricClause(_Strict):
    """A condition over decode samples of the current launch, after a warm-up gate."""

    kind: Literal["metric"]
    when: str
    warmup: int = Field(default=2, ge=0)  # decode samples ignored at launch start
    min_samples: int = Field(default=5, ge=1)
    window: int = Field(default=40, ge=1)  # the most recent N samples after the warm-up


class ConfigClause(_Strict):
    """A predicate over requested vs effective flags (launch, resolution, server_args= line)."""

    kind: Literal["config"]
    when: str


class DraftClause(_Strict):
    """A finding of the draft-checkpoint inspector (core.draft: `spectui inspect`, `check --inspect`).

    Matches when some finding has one of `code` (and/or `category`) and one of `severity`; its title, fix,
    code and evidence become m.finding, m.finding_fix, m.finding_code, m.finding_evidence."""

    kind: Literal["draft"]
    code: list[str] | None = None
    category: list[str] | None = None
    severity: list[Severity] | None = None


class GroupClause(_Strict):
    """all: every clause holds; any: at least one; none: no clause holds (e.g. no error line seen)."""

    kind: Literal["all", "any", "none"]
    of: list[Clause] = Field(min_length=1)


Clause = Annotated[LogClause | MetricClause | ConfigClause | DraftClause | GroupClause, Field(discriminator="kind")]
GroupClause.model_rebuild()


class FixSpec(_Strict):
    """One flag patch. Values are expressions ("requested.speculative_num_draft_tokens - 1", "'EAGLE3'")."""

    set: dict[str, str] = Field(default_factory=dict)
    unset: list[str] = Field(default_factory=list)
    when: str | None = None  # this alternative applies only when the expression holds


class Example(_Strict):
    """A log snippet or a metric series the rule must (or must not) fire on."""

    expect: Literal["fire", "no-fire"]
    log: str | None = None
    series: list[float] | None = None  # accept len per synthetic decode line
    tps: float | list[float] | None = None  # gen throughput per line (one value = every line)
    running: int = 1
    queue: int = 0
    launch: str | None = None
    version: str | None = None
    baseline_tps: float | None = None
    source: str | None = None  # where a real log line came from
    fix: dict[str, str] | None = None  # expected Fix.set (exact)
    unset: list[str] | None = None  # expected Fix.unset (exact)
    text: str | None = None  # a substring the filled diagnosis must contain
    draft: list[dict[str, Any]] | None = None  # inspector findings given to the engine (code, category, ...)
    process_gone: bool = False  # the log ends and the server's process is gone (what a probe would see)


class RuleModel(_Strict):
    id: str = Field(pattern=r"^[A-Z]{2,8}[0-9]{3}$")
    title: str = Field(min_length=3)
    category: Category
    severity: Severity
    mode: Literal["all", "any"] = "all"  # how the top-level [[match]] clauses combine
    match: list[Clause] = Field(min_length=1)
    diagnosis: str | list[str]  # first template whose placeholders all have values wins
    explanation: str
    evidence: list[str] = Field(default_factory=list)  # extra evidence templates (dropped if undefined)
    fix: list[FixSpec] = Field(default_factory=list)  # alternatives: the first fully computable wins
    links: list[str] = Field(default_factory=list)
    priority: int = 50  # among equal severity, lower is shown first (root causes before consequences)
    fallback: bool = False  # a catch-all: skipped for a record another rule already explains
    versions: str | None = None  # ">=0.5.10", "<=0.5.10", "0.4.9..0.5.10": only then (if version known)
    examples: list[Example] = Field(default_factory=list)
