"""Errors of `spectui fleet`, under spectui.errors' tree (one-line messages, exit codes 1 and 2).

SpectuiError
├── PrometheusError            Prometheus could not be asked (down, timeout, 5xx, query failed): exit 1
└── UsageError
    └── FleetInputError        bad --prometheus URL or --selector, or a selector matching nothing: exit 2
"""

from __future__ import annotations

from spectui.errors import SpectuiError, UsageError


class PrometheusError(SpectuiError):
    """Prometheus is unreachable or failed to answer a query (exit code 1)."""


class FleetInputError(UsageError):
    """The operator's input is wrong: not a Prometheus URL, a malformed selector, no target matched (exit 2)."""
