"""`spectui fleet`: every SGLang server a Prometheus scrapes, worst first (CONTRACTS `fleet`).

Public API:
    PrometheusClient(url, timeout=...)     instant queries and targets of one Prometheus (httpx)
    collect(client, selector, baselines=Baselines(...), window="1m") -> FleetSnapshot
    FleetSnapshot.to_json()                the contract's {"instances": [...], "prometheus": URL}
    FleetSnapshot.entries[i].metrics       InstanceMetrics: one clean record per instance
                                           (.rule_values() gives the names the rule engine reads)
    FleetSnapshot.entries[i].diagnoses     FleetDiagnosis list (check's category vocabulary)
    PrometheusError (exit 1), FleetInputError (exit 2)
"""

from spectui.fleet.collect import Baselines, FleetEntry, FleetSnapshot, check_window, collect
from spectui.fleet.diagnose import FleetDiagnosis, accept_score, diagnose, rank_key
from spectui.fleet.errors import FleetInputError, PrometheusError
from spectui.fleet.metrics import METRIC_NAMES, InstanceMetrics
from spectui.fleet.prom import PrometheusClient, Sample, Target, normalize_selector, normalize_url

__all__ = [
    "METRIC_NAMES", "Baselines", "FleetDiagnosis", "FleetEntry", "FleetInputError", "FleetSnapshot",
    "InstanceMetrics", "PrometheusClient", "PrometheusError", "Sample", "Target", "accept_score",
    "check_window", "collect", "diagnose", "normalize_selector", "normalize_url", "rank_key",
]
