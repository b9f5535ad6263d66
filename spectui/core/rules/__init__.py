"""The rule engine: rules/*.toml compiled (schema, vocabulary, expressions) and matched against records,
metrics and the launch's config, giving diagnoses with evidence and fixes.

Callers outside this package import these names from here.
"""

from typing import TYPE_CHECKING, Any

from spectui.core.rules.compile import CConfig, CGroup, CLog, CMetric, load_file  # noqa: E402
from spectui.core.rules.config import ConfigContext, crude_requested  # noqa: E402
from spectui.core.rules.engine import (
    Diagnosis,
    Fix,
    Rule,
    RuleEngine,
    default_rule_dirs,  # noqa: E402
    load_rules,
)
from spectui.core.rules.match import BaselineTps, DecodeWindow, baseline_ratio, spec_math  # noqa: E402

_EXAMPLES = ("parse_launch", "run_all", "run_example")  # spectui.core.launch: imported on first use (not by check)

if TYPE_CHECKING:  # what __getattr__ gives, for the type checker (tests/test_types.py)
    from spectui.core.rules.examples import parse_launch, run_all, run_example


def __getattr__(name: str) -> Any:
    if name in _EXAMPLES:
        from spectui.core.rules import examples

        return getattr(examples, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BaselineTps",
    "CConfig",
    "CGroup",
    "CLog",
    "CMetric",
    "ConfigContext",
    "DecodeWindow",
    "Diagnosis",
    "Fix",
    "Rule",
    "RuleEngine",
    "baseline_ratio",
    "crude_requested",
    "default_rule_dirs",
    "load_file",
    "load_rules",
    "parse_launch",
    "run_all",
    "run_example",
    "spec_math",
]
