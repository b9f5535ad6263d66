"""The rule engine: rules/*.toml compiled (schema, vocabulary, expressions) and matched against records,
metrics and the launch's config, giving diagnoses with evidence and fixes.

Callers outside this package import these names from here.
"""

from spectui.core.rules.engine import Diagnosis, Fix, Rule, RuleEngine, load_rules

__all__ = ["Diagnosis", "Fix", "Rule", "RuleEngine", "load_rules"]
