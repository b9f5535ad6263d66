"""One fleet snapshot: a few instant queries, one record per SGLang target, diagnoses, worst first.

Queries (each an instant query on /api/v1/query, SEL = the --selector label matchers):
  up{SEL}                                             which targets exist and whether the last scrape worked
  {__name__=~"sglang[:_](gen_throughput|...)",SEL}    every metric fleet reads, in one round trip (both spellings)
  min_over_time(sglang:num_queue_reqs{SEL}[W]) > 0    the queues that never emptied over the look-back window
  sum by (job, instance) (rate(sglang:generation_tokens_total{SEL}[W]))   only for targets without gen_throughput
Without a selector, only the jobs that exposed sglang:num_running_reqs within the last hour are listed
(so Prometheus's own target and node exporters stay out, and a crashed server still shows as down). In any
job, a target that is up but exports none of SGLang's families is not an instance (the exporter of a
federation, a sidecar in the same job); a down target is listed (it exports nothing either).
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spectui.fleet.diagnose import SEVERITY_ORDER, FleetDiagnosis, diagnose, rank_key
from spectui.fleet.errors import FleetInputError, PrometheusError
from spectui.fleet.metrics import ALL_NAMES, GEN_TOKENS_COUNTER, InstanceMetrics, Key, fold, split_by_instance
from spectui.fleet.prom import PrometheusClient, Sample, normalize_selector

_DURATION = re.compile(r"^([0-9]+(ms|[smhdwy]))+$")
DISCOVERY_LOOKBACK = "1h"


@dataclass(frozen=True, slots=True)
class Baselines:
    """Decode tok/s without speculation: one for every instance, and/or per instance (`host:port`)."""

    default: float | None = None
    per_instance: Mapping[str, float] = field(default_factory=dict)

    def for_instance(self, job: str, instance: str) -> float | None:
        return self.per_instance.get(f"{job}/{instance}", self.per_instance.get(instance, self.default))


@dataclass(slots=True)
class FleetEntry:
    metrics: InstanceMetrics
    diagnoses: list[FleetDiagnosis]

    @property
    def worst(self) -> str | None:
        return min((d.severity for d in self.diagnoses), key=SEVERITY_ORDER.__getitem__, default=None)

    def to_json(self) -> dict[str, Any]:
        return {**self.metrics.to_json(), "diagnoses": [d.to_json() for d in self.diagnoses]}


@dataclass(slots=True)
class FleetSnapshot:
    prometheus: str
    selector: str
    entries: list[FleetEntry]
    taken_at: float
    window: str = "1m"

    @property
    def exit_code(self) -> int:
        """1 when some instance has an error-severity diagnosis (down, useless draft, slower than baseline)."""
        return 1 if any(e.worst == "error" for e in self.entries) else 0

    def to_json(self) -> dict[str, Any]:
        return {"instances": [e.to_json() for e in self.entries], "prometheus": self.prometheus,
                "selector": self.selector, "time": round(self.taken_at, 3)}


def check_window(window: str) -> str:
    if not _DURATION.match(window or ""):
        raise FleetInputError(f"--window {window!r}: a Prometheus duration such as 30s, 1m or 5m")
    return window


def _matchers(sel: str, *extra: str) -> str:
    return "{" + ",".join(x for x in (*extra, sel) if x) + "}"


def _metric(name: str, sel: str = "") -> str:
    """A vector selector for SGLang's `sglang:NAME` in either spelling a scrape stores: `sglang:NAME` (text
    format) or `sglang_NAME` (OpenMetrics from a newer prometheus_client, as the real 0.5.16 server gives)."""
    return _matchers(sel, f'__name__=~"sglang[:_]{re.escape(name.removeprefix("sglang:"))}"')


def collect(client: PrometheusClient, selector: str | None = None, *, baselines: Baselines | None = None,
            window: str = "1m") -> FleetSnapshot:
    """Ask Prometheus about every SGLang target the selector matches; raise FleetInputError when none does.
    The cyclic garbage collector is off meanwhile: a fleet's answer is ~10 small objects a series (90,000
    series at 10,000 instances), none in a cycle, and the collections walking them were a third of the
    CPU; the caller's setting is restored at the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _collect(client, selector, baselines=baselines, window=window)
    finally:
        if was_enabled:
            gc.enable()


def _collect(client: PrometheusClient, selector: str | None, *, baselines: Baselines | None,
             window: str) -> FleetSnapshot:
    sel = normalize_selector(selector)
    window = check_window(window)
    baselines = baselines or Baselines()
    try:
        up = client.query("up" + (_matchers(sel) if sel else ""))
    except FleetInputError as exc:
        raise FleetInputError(f"--selector {selector!r}: {exc}") from None
    names = "|".join(re.escape(n.removeprefix("sglang:")) for n in ALL_NAMES)
    series = client.query(_matchers(sel, f'__name__=~"sglang[:_]({names})"'))
    by_instance = split_by_instance(series)
    records: dict[Key, InstanceMetrics] = {}
    if sel:
        wanted_jobs = None
    else:
        known = {k[0] for k in by_instance}
        recent = client.query(f"count by (job) (last_over_time({_metric('num_running_reqs', _not_jobs(known))}"
                              f"[{DISCOVERY_LOOKBACK}]))")
        wanted_jobs = {s.labels.get("job", "") for s in recent} | known
    for s in up:
        key = (s.labels.get("job", ""), s.labels.get("instance", ""))
        if wanted_jobs is not None and key[0] not in wanted_jobs:
            continue
        records[key] = InstanceMetrics(job=key[0], instance=key[1], up=s.value == 1.0)
    for key in by_instance:
        records.setdefault(key, InstanceMetrics(job=key[0], instance=key[1]))
    for key, record in records.items():
        fold(record, by_instance.get(key, []))
        record.baseline_tps = baselines.for_instance(*key)
    # A target that is scraped fine yet exports none of SGLang's families is no SGLang server (Prometheus's
    # own target, a node exporter or the exporter of a federation in the same job): not an instance. A down
    # target stays: a crashed server exports nothing either.
    scraped = len(records)
    records = {k: r for k, r in records.items() if r.up is not True or r.has_sglang_metrics}
    if not records:
        raise FleetInputError(_nothing_matched(client, sel, selector, up, scraped))
    _queue_window(client, sel, window, records)
    _throughput_fallback(client, sel, window, records)
    _scrape_errors(client, records)
    entries = [FleetEntry(r, diagnose(r, window=window)) for r in records.values()]
    entries.sort(key=lambda e: rank_key(e.metrics, e.diagnoses))
    return FleetSnapshot(prometheus=client.url, selector=sel, entries=entries, taken_at=time.time(),
                         window=window)


def _not_jobs(jobs: set[str]) -> str:
    """A matcher leaving out the jobs already known to be SGLang's: the hour-long look-back then reads only
    the series of the other jobs (at 10,000 instances, reading all of them was the slowest query)."""
    if not jobs or len(jobs) > 64 or not all(j.isascii() and j.isprintable() for j in jobs):
        return ""  # a job name PromQL would need escapes for (or UTF-8 cannot carry): read every job instead
    regex = "|".join(re.escape(j) for j in sorted(jobs))
    return 'job!~"' + regex.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _nothing_matched(client: PrometheusClient, sel: str, selector: str | None, up: list[Sample],
                     scraped: int = 0) -> str:
    if sel and scraped:
        return (f"--selector {selector!r} matches {scraped} scrape target(s) at {client.url}, none of them an "
                "SGLang server (no sglang:* metrics: is --enable-metrics on, and the scrape path /metrics?)")
    try:
        jobs = sorted({s.labels.get("job", "") for s in client.query("up")} - {""})
    except (PrometheusError, FleetInputError):
        jobs = []
    known = f" (jobs Prometheus scrapes: {', '.join(jobs)})" if jobs else " (Prometheus scrapes no target at all)"
    if sel:
        return f"--selector {selector!r} matches no scrape target at {client.url}{known}"
    where = f"; its targets are not SGLang servers{known}" if up else known
    return (f"Prometheus at {client.url} has no SGLang metrics (no sglang:num_running_reqs series){where}; "
            "start the servers with --enable-metrics and scrape them, or pick them with --selector")


def _queue_window(client: PrometheusClient, sel: str, window: str, records: dict[Key, InstanceMetrics]) -> None:
    if not any(r.queued for r in records.values()):
        return
    # `> 0`: only the queues that never emptied come back (a few series, not one per DP rank of the fleet)
    samples = client.query(f"min_over_time({_metric('num_queue_reqs', sel)}[{window}]) > 0")
    for key, group in split_by_instance(samples).items():
        if key in records:
            records[key].queued_min = int(round(sum(max(0.0, s.value) for s in group if s.value == s.value)))


def _throughput_fallback(client: PrometheusClient, sel: str, window: str,
                         records: dict[Key, InstanceMetrics]) -> None:
    """Releases or setups without sglang:gen_throughput: the tokenizer's generation counter as a rate."""
    missing = [r for r in records.values() if r.up is not False and r.gen_tokens_per_s is None]
    if not missing:
        return
    samples = client.query(f"sum by (job, instance) (rate({_metric(GEN_TOKENS_COUNTER, sel)}[{window}]))")
    for key, group in split_by_instance(samples).items():
        record = records.get(key)
        if record is not None and record.gen_tokens_per_s is None and group and group[0].value == group[0].value:
            record.gen_tokens_per_s = max(0.0, group[0].value)
            record.gen_tokens_source = "rate"


def _scrape_errors(client: PrometheusClient, records: dict[Key, InstanceMetrics]) -> None:
    """The last scrape error of down targets (/api/v1/targets); best effort, the `up` value says enough."""
    if not any(r.up is False for r in records.values()):
        return
    try:
        targets = client.targets()
    except (PrometheusError, FleetInputError):
        return
    for t in targets:
        record = records.get((t.job, t.instance))
        if record is not None and record.up is False and t.last_error:
            record.scrape_error = " ".join(t.last_error.split())
