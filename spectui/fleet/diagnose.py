"""Diagnoses the Prometheus numbers alone support, and the worst-first order of the fleet.

Categories are check's vocabulary (CONTRACTS `check`): `low-accept-length`, `spec-slower-than-baseline`,
`capacity`, `other`. The thresholds follow the built-in rules that read the same numbers from logs:
accept len < 1.15 = the draft contributes nothing (SPEC021, error); < 1.3 = very low (SPEC023); far
below its ceiling steps + 1 (saturation < 0.25 at >= 3 steps, SPEC025); decode tok/s under the
baseline (SPEC026, error); a queue that never emptied over the look-back window (capacity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from spectui.fleet.metrics import InstanceMetrics

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
USELESS_ACCEPT_LEN = 1.15
LOW_ACCEPT_LEN = 1.3
LOW_SATURATION = 0.25
ASSUMED_CEILING = 4  # ranking only: SGLang's default chain (steps 3) when a release does not export steps


@dataclass(frozen=True, slots=True)
class FleetDiagnosis:
    rule: str
    category: str
    severity: Severity
    title: str
    message: str
    evidence: tuple[str, ...] = ()
    explanation: str = ""

    def to_json(self) -> dict[str, Any]:
        """check's diagnosis shape (rule, category, severity, title, message, evidence, fix, ...)."""
        return {"rule": self.rule, "category": self.category, "severity": self.severity, "title": self.title,
                "message": self.message, "evidence": list(self.evidence), "fix": None,
                "explanation": self.explanation, "links": [], "count": 1, "first_line": None,
                "last_line": None}


def diagnose(m: InstanceMetrics, *, window: str = "1m") -> list[FleetDiagnosis]:
    """Worst first (errors, then warnings, then notes)."""
    out: list[FleetDiagnosis] = []
    if m.up is False:
        why = m.scrape_error or "the last scrape failed"
        out.append(FleetDiagnosis(
            "FLEET001", "other", "error", "Instance down: Prometheus cannot scrape it",
            f"{m.instance} is down (up == 0): {why}. The server crashed, was stopped, or its metrics port is "
            "unreachable; open its log (spectui connect / spectui check).",
            (f"up{{job=\"{m.job}\",instance=\"{m.instance}\"}} == 0",) + ((f"last error: {why}",) if m.scrape_error else ()),
        ))
        return out
    if not m.has_sglang_metrics:
        out.append(FleetDiagnosis(
            "FLEET002", "other", "warning", "No SGLang metrics on this target",
            f"{m.instance} is scraped but exposes none of SGLang's sglang:* metrics: not an SGLang server, or "
            "the scrape path is wrong (SGLang serves /metrics with --enable-metrics).",
            ("no sglang:gen_throughput / sglang:num_running_reqs series",),
        ))
        return out
    if not m.speculative:
        out.append(FleetDiagnosis(
            "FLEET003", "other", "info", "No speculative-decoding metrics",
            f"{m.instance} reports no accept length (sglang:spec_accept_length absent or 0): speculative "
            "decoding is off on this server.",
            (_present("sglang:spec_accept_length", m),),
        ))
    elif m.accept_len is None:
        out.append(FleetDiagnosis(
            "FLEET004", "other", "info", "Speculative, but no accept length yet",
            f"{m.instance} runs speculative decoding ({m.steps} steps) but has not logged a decode interval "
            "with an accept length yet (idle since start?).",
            (f"sglang:spec_num_steps = {m.steps}",),
        ))
    else:
        low = _low_accept(m)
        if low is not None:
            out.append(low)
    slow = _slower_than_baseline(m)
    if slow is not None:
        out.append(slow)
    if m.queued and m.queued_min:
        out.append(FleetDiagnosis(
            "FLEET007", "capacity", "warning", "Requests queue up",
            f"{m.instance} has {m.queued} request(s) waiting and its queue has not emptied over the last "
            f"{window} (at least {m.queued_min} waiting throughout) while {m.running} run: "
            + ("speculation caps running requests at 48 unless --max-running-requests is given; raise it if "
               "memory allows, or add capacity." if m.speculative and m.running == 48 else
               "raise --max-running-requests if memory allows, or add capacity."),
            (f"sglang:num_queue_reqs = {m.queued}", f"min_over_time(sglang:num_queue_reqs[{window}]) = {m.queued_min}"),
        ))
    out.sort(key=lambda d: SEVERITY_ORDER[d.severity])
    return out


def _present(name: str, m: InstanceMetrics) -> str:
    return f"{name} {'= 0' if name in m.metric_names else 'not exported'}"


def _low_accept(m: InstanceMetrics) -> FleetDiagnosis | None:
    a = m.accept_len
    assert a is not None
    evidence = [f"sglang:spec_accept_length = {a:.2f}"]
    if m.ceiling:
        evidence.append(f"ceiling steps + 1 = {m.ceiling}")
    if a < USELESS_ACCEPT_LEN:
        return FleetDiagnosis(
            "FLEET005", "low-accept-length", "error", "The draft contributes nothing (accept len about 1.0)",
            f"{m.instance}: accept len {a:.2f}: almost every drafted token is rejected, so speculation only "
            "adds cost. Check that the draft matches this target and loaded fully, and that the algorithm "
            "matches the draft (EAGLE vs EAGLE3); spectui check on its log says more.", tuple(evidence))
    sat = m.saturation
    if a < LOW_ACCEPT_LEN or (sat is not None and sat < LOW_SATURATION and (m.steps or 0) >= 3):
        where = f" of a possible {m.ceiling}" if m.ceiling else ""
        return FleetDiagnosis(
            "FLEET006", "low-accept-length", "warning", "Accept length low",
            f"{m.instance}: accept len {a:.2f}{where}: the draft rarely agrees with the target. Check the "
            "chat template, temperature and draft/target pairing, or reduce --speculative-num-steps.",
            tuple(evidence))
    return None


def _slower_than_baseline(m: InstanceMetrics) -> FleetDiagnosis | None:
    if not m.speculative or not m.baseline_tps or m.gen_tokens_per_s is None or not m.running:
        return None
    if m.gen_tokens_per_s >= m.baseline_tps:
        return None
    ratio = m.gen_tokens_per_s / m.baseline_tps
    sat = m.saturation
    if m.steps is not None and m.steps <= 2 and sat is not None and sat >= 0.5:
        # The seed incident: the draft agrees, the depth caps what it can give (steps 1: ceiling 2).
        advice = (f"its accept len {m.accept_len:.2f} is near its ceiling of {m.ceiling} (steps {m.steps}): the "
                  "depth, not the draft, limits the gain — raise --speculative-num-steps (spectui advise "
                  "predicts each depth), or turn speculation off.")
    else:
        advice = "turn speculation off, or fix the draft / depth first."
    return FleetDiagnosis(
        "FLEET008", "spec-slower-than-baseline", "error", "Speculation is slower than no speculation",
        f"{m.instance} decodes {m.gen_tokens_per_s:.1f} tok/s with speculation, {ratio:.2f}x its "
        f"{m.baseline_tps:.1f} tok/s baseline: {advice}",
        (f"sglang:gen_throughput = {m.gen_tokens_per_s:.1f}", f"baseline = {m.baseline_tps:.1f} tok/s"))


def accept_score(m: InstanceMetrics) -> float | None:
    """Accept length against its own ceiling (raw length over ASSUMED_CEILING when the ceiling is unknown)."""
    if m.accept_len is None:
        return None
    return m.accept_len / (m.ceiling or ASSUMED_CEILING)


def rank_key(m: InstanceMetrics, diagnoses: list[FleetDiagnosis]) -> tuple[Any, ...]:
    """Worst first: down, then any error; then low accept score; then slow against baseline; then name."""
    worst = min((SEVERITY_ORDER[d.severity] for d in diagnoses), default=3)
    score = accept_score(m)
    speed = (m.gen_tokens_per_s / m.baseline_tps) if (m.baseline_tps and m.gen_tokens_per_s is not None) else None
    return (0 if m.up is False else 1, 0 if worst == 0 else 1,
            score if score is not None else float("inf"), speed if speed is not None else float("inf"),
            m.job, m.instance)
