"""The rule file format (one TOML file per rule): strict pydantic models and the fixed name vocabulary.

A rule is data, never code: regexes, literal substrings and expressions in spectui.core.ruleexpr's tiny
language, all checked when the file loads. Unknown keys are errors (extra="forbid").
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

CATEGORIES = (
    "unrecognized-argument", "invalid-argument", "silent-override", "low-accept-length",
    "spec-slower-than-baseline", "oom", "nccl", "cuda-graph", "weight-load", "hidden-state-mismatch",
    "crash", "port-in-use", "capacity", "other",
)
Category = Literal[
    "unrecognized-argument", "invalid-argument", "silent-override", "low-accept-length",
    "spec-slower-than-baseline", "oom", "nccl", "cuda-graph", "weight-load", "hidden-state-mismatch",
    "crash", "port-in-use", "capacity", "other",
]
Severity = Literal["error", "warning", "info"]
RecordType = Literal["error", "warning", "milestone", "prefill", "decode"]

# Names any expression or {placeholder} may read. `requested.<dest>` / `effective.<dest>` are SGLang
# dest names (the launch flags as given / as SGLang resolved them), `env.<VAR>` the launch environment,
# `m.<name>` what a log clause captured (its regex's named groups plus the automatic ones below).
CONFIG_NAMES = {
    "steps": "speculative_num_steps in effect (server_args line, else resolution, else the launch)",
    "topk": "speculative_eagle_topk in effect",
    "draft_tokens": "speculative_num_draft_tokens in effect",
    "algorithm": "speculative_algorithm in effect (upper-case), none without speculation",
    "ceiling": "the most accept len can reach: steps + 1",
    "max_running_requests": "max_running_requests in effect",
    "version": "the SGLang version given (--sglang-version), if any",
    "argparse_error": "pre-flight: the text after 'error: ' argparse would print for the launch",
    "resolve_error_type": "pre-flight: the exception SGLang would raise while resolving the flags",
    "resolve_error": "pre-flight: that exception's message",
    "resolve_warnings": "pre-flight: the warnings SGLang would log, joined by newlines",
    "draft_arch": "the draft architecture from 'Load weight end. type=...' (second load)",
    "target_arch": "the target architecture from the first 'Load weight end. type=...'",
    "launch_known": "true when the launch command (or a resolution of it) was given",
    "baseline_tps": "decode tok/s without speculation (given, or measured in an earlier launch of this log)",
}
METRIC_NAMES = {
    "samples": "decode samples in the clause's window (after the warm-up)",
    "accept_len": "mean accept len over the window", "accept_len_last": "last accept len",
    "accept_len_min": "lowest accept len", "accept_len_max": "highest accept len",
    "accept_len_p10": "10th percentile", "accept_len_p90": "90th percentile",
    "accept_rate": "mean of the printed accept rate (its formula changed across versions)",
    "gen_tokens_per_s": "mean gen throughput, summed across the DP ranks seen",
    "running_req": "mean #running-req", "running_req_min": "lowest #running-req",
    "running_req_max": "highest #running-req", "queue_req": "mean #queue-req",
    "queue_req_min": "lowest #queue-req", "graph_off_fraction": "share of samples with graph: False",
    "speedup_observed": "gen_tokens_per_s / baseline_tps",
    "alpha": "per-token acceptance estimated from accept_len at depth steps (SPECDEC §1.7)",
    "saturation": "(accept_len - 1) / steps: 1.0 = every drafted token accepted",
    "implied_cost": "draft cost per drafted token implied by speedup_observed (Leviathan model)",
    "best_steps": "the depth that pays most at alpha and that cost", "best_speedup": "its modelled speedup",
    "draft_acceptance_rate": "(accept_len - 1) / (draft_tokens - 1), recomputed",
}
CAPTURE_NAMES = {
    "line": "line number of the matching record", "text": "its first line",
    "exc_type": "exception type", "message": "exception message", "headline": "the line that opened it",
    "frame": "function of the innermost frame (the one that raised)", "frame_file": "its file",
    "frame_line": "its line number", "frames": "every frame function, innermost last",
    "milestone": "milestone kind",
    "stage": "start-up stage when the record came: the last milestone kind (graph_capture_begin, ...) or serving",
    "when": "the same as a phrase: 'while serving', 'during start-up (after graph_capture_begin)', '(stage not in the log)'",
}
_DEST = re.compile(r"[a-z_][a-z0-9_]*\Z")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def in_vocabulary(name: str, captures: frozenset[str]) -> bool:
    """True when `name` may appear in a rule expression or placeholder."""
    if name in CONFIG_NAMES or name in METRIC_NAMES:
        return True
    prefix, dot, rest = name.partition(".")
    if not dot:
        return False
    if prefix in ("requested", "effective"):
        return bool(_DEST.match(rest))
    if prefix == "env":
        return bool(_ENV.match(rest))
    if prefix == "m":
        return rest in CAPTURE_NAMES or rest in captures
    return False


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


class GroupClause(_Strict):
    """all: every clause holds; any: at least one; none: no clause holds (e.g. no error line seen)."""

    kind: Literal["all", "any", "none"]
    of: list[Clause] = Field(min_length=1)


Clause = Annotated[LogClause | MetricClause | ConfigClause | GroupClause, Field(discriminator="kind")]
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
