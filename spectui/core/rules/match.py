"""What rule clauses are evaluated against: record text and log matching, the decode window, the config.

Kept apart from the engine so each piece can be tested alone. Nothing here runs per decode line except
DecodeWindow.add (one tuple appended).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from spectui.core.log import DecodeSample, ErrorEvent, Milestone, PrefillSample, Record, WarningEvent
from spectui.core.rules.compile import CDraft, CLog, CMetric
from spectui.core.rules.frames import died_in
from spectui.core.specdec import theory as specmath

NOMINAL_DRAFT_COST = 0.1  # per drafted token, in target steps: a 1-layer draft on an ~8B target (docs/SPECDEC.md §1.4)
RECORD_TYPE = {ErrorEvent: "error", WarningEvent: "warning", Milestone: "milestone",
               DecodeSample: "decode", PrefillSample: "prefill"}


def record_text(record: Record) -> str:
    """The text log clauses search: a warning's or milestone's text; an error's type, message and lines."""
    if isinstance(record, WarningEvent | Milestone):
        return record.text
    if isinstance(record, ErrorEvent):
        head = f"{record.exc_type}: {record.message}" if record.message else record.exc_type
        return "\n".join((head, record.headline, *record.lines))
    if isinstance(record, DecodeSample | PrefillSample):
        return ", ".join(f"{k}: {v}" for k, v in record.fields.items())
    return getattr(record, "text", "")


def first_line(record: Record) -> str:
    if isinstance(record, ErrorEvent):
        if record.message or record.exc_type:
            return f"{record.exc_type}: {record.message}" if record.message else record.exc_type
        return record.headline
    return record_text(record).split("\n", 1)[0]


def match_log(clause: CLog, record: Record, text: str) -> dict[str, Any] | None:
    """The captures (m.*) when `record` satisfies `clause`, else None. The literal was tested already."""
    if clause.exclude is not None and clause.exclude.search(text):
        return None
    captures: dict[str, Any] = {}
    if isinstance(record, ErrorEvent):
        if clause.exc_types is not None:
            short = record.exc_type.rsplit(".", 1)[-1]
            if record.exc_type not in clause.exc_types and short not in clause.exc_types:
                return None
        if clause.message is not None:
            m = clause.message.search(record.message)
            if m is None:
                return None
            captures.update({k: v for k, v in m.groupdict().items() if v is not None})
        if clause.frame is not None and not any(clause.frame.fullmatch(f.func) for f in record.frames):
            return None
        if clause.frame_file is not None and not any(clause.frame_file.search(f.file) for f in record.frames):
            return None
        died = died_in(record.frames) if record.frames else None
        if clause.subsystems is not None and (died is None or died.subsystem not in clause.subsystems):
            return None
        if clause.through is not None and (died is None or not clause.through.intersection(died.through)):
            return None
        if clause.outside is not None and died is not None and clause.outside.intersection(died.through):
            return None
        if died is not None:
            captures.update(died.captures())
        if clause.source is not None:
            m = clause.source.search(record.frames[-1].source) if record.frames else None
            if m is None:
                return None
            captures.update({k: v for k, v in m.groupdict().items() if v is not None})
        captures.update(exc_type=record.exc_type, message=record.message, headline=record.headline)
        if record.frames:
            inner = record.frames[-1]
            captures.update(frame=inner.func, frame_file=inner.file, frame_line=inner.lineno,
                            frames=" -> ".join(f.func for f in record.frames))
    elif (clause.exc_types is not None or clause.message is not None or clause.frame is not None
          or clause.source is not None or clause.subsystems is not None or clause.through is not None
          or clause.outside is not None):
        return None
    if clause.milestone is not None and not (isinstance(record, Milestone) and record.kind == clause.milestone):
        return None
    if clause.pattern is not None:
        m = clause.pattern.search(text)
        if m is None:
            return None
        captures.update({k: v for k, v in m.groupdict().items() if v is not None})
    if clause.catalogue is not None:
        m = clause.catalogue.regex.search(text)
        if m is None:
            return None
        known = clause.catalogue.which(m.group(0))
        if known is not None:
            captures.update(message_id=known[0], message_releases=known[1], message_source=known[2])
    if isinstance(record, Milestone):
        captures["milestone"] = str(record.kind)
    captures.update(line=record.line, text=first_line(record)[:300])
    return captures


class DecodeWindow:
    """The recent decode samples of the current launch, each with its ordinal (for the warm-up gate)."""

    def __init__(self, maxlen: int = 200) -> None:
        self._samples: deque[tuple[int, int, float | None, float | None, float | None, int | None,
                                   int | None, bool | None, int | None]] = deque(maxlen=maxlen)
        self.count = 0  # decode samples seen in this launch
        self.spec_seen = False
        self.start_seen = False  # the launch's start-up was in view: its first samples are warm-up

    def add(self, s: DecodeSample) -> None:
        # Only a CUDA graph counts for graph_off_fraction: on the CPU device the line says `cpu graph:
        # False` on every healthy server (the CPU backend captures no graphs unless asked), which is no symptom.
        graph = None if "cpu graph" in s.fields else s.graph
        self._samples.append((self.count, s.line, s.accept_len, s.accept_rate, s.gen_tokens_per_s,
                              s.running_req, s.queue_req, graph, s.ctx.dp_rank))
        self.count += 1
        if s.accept_len is not None:
            self.spec_seen = True

    def clear(self) -> None:
        self._samples.clear()
        self.count = 0
        self.spec_seen = False
        self.start_seen = False

    def mean_tps(self) -> float | None:
        """Server decode tok/s over everything kept (for the no-speculation baseline of a launch), with
        the mean #running-req it was measured at (BaselineTps.running)."""
        rows = list(self._samples)
        tps = _server_tps(rows)
        running = [r[5] for r in rows if r[5] is not None]
        return None if tps is None else BaselineTps(tps, sum(running) / len(running) if running else None)

    def aggregates(self, clause: CMetric) -> dict[str, Any] | None:
        """Aggregates over the clause's window, or None while it has fewer than min_samples samples."""
        # A log picked up mid-run has no start-up in view, hence no warm-up samples to skip.
        warmup = clause.warmup if self.start_seen else 0
        rows = [r for r in self._samples if r[0] >= warmup][-clause.window:]
        if len(rows) < clause.min_samples:
            return None
        out: dict[str, Any] = {"samples": len(rows), "first_line": rows[0][1], "last_line": rows[-1][1]}
        accept = [r[2] for r in rows if r[2] is not None]
        if accept:
            ordered = sorted(accept)
            out.update(accept_len=sum(accept) / len(accept), accept_len_last=accept[-1],
                       accept_len_min=ordered[0], accept_len_max=ordered[-1],
                       accept_len_p10=_pct(ordered, 0.1), accept_len_p90=_pct(ordered, 0.9))
        rates = [r[3] for r in rows if r[3] is not None]
        if rates:
            out["accept_rate"] = sum(rates) / len(rates)
        out["gen_tokens_per_s"] = _server_tps(rows)
        running = [r[5] for r in rows if r[5] is not None]
        if running:
            out.update(running_req=sum(running) / len(running), running_req_min=min(running),
                       running_req_max=max(running))
        queue = [r[6] for r in rows if r[6] is not None]
        if queue:
            out.update(queue_req=sum(queue) / len(queue), queue_req_min=min(queue))
        graphs = [r[7] for r in rows if r[7] is not None]
        if graphs:
            out["graph_off_fraction"] = sum(1 for g in graphs if not g) / len(graphs)
        return out


def _server_tps(rows: list[Any]) -> float | None:
    tps: list[float] = [r[4] for r in rows if r[4] is not None]
    if not tps:
        return None
    ranks = {r[8] for r in rows if r[8] is not None}
    return sum(tps) / len(tps) * max(len(ranks), 1)  # one line per DP rank and interval: sum the ranks


def _pct(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class BaselineTps(float):
    """A no-speculation decode tok/s that knows the concurrency it was measured at (`running`, None when
    unknown: then it is taken to be the concurrency of what it is compared with, as bench measures both)."""

    running: float | None

    def __new__(cls, value: float, running: float | None = None) -> BaselineTps:
        obj = super().__new__(cls, value)
        obj.running = running if isinstance(running, int | float) and running > 0 else None
        return obj


SAME_CONCURRENCY = 1.35  # running-req ratio within which a baseline counts as measured at the same load


def baseline_ratio(tps: Any, running: Any, baseline: Any) -> float | None:
    """tok/s with speculation / without, like with like: both at the same concurrency (the per-request
    ratio then equals the aggregate one). None without a baseline, or when the baseline was measured at a
    concurrency other than `running` (a single-stream baseline against a loaded server compares nothing)."""
    if not isinstance(tps, int | float) or not isinstance(baseline, int | float) or not baseline > 0:
        return None
    base_running = getattr(baseline, "running", None)
    if base_running and isinstance(running, int | float) and running > 0:
        lo, hi = sorted((float(base_running), float(running)))
        if hi / lo > SAME_CONCURRENCY:
            return None
    return tps / float(baseline)


def spec_math(agg: Mapping[str, Any], steps: Any, draft_tokens: Any, baseline: Any) -> dict[str, Any]:
    """alpha, saturation, observed speedup and the depth that pays (docs/SPECDEC.md §1.5–1.7).

    The depth comes from spectui.core.specdec.advise at the window's batch (running_req): per-request
    decode speed (gen tok/s / running) against the no-spec per-request speed at the same concurrency; without
    a comparable baseline the advisor's prior step cost at that batch. `implied_cost` is the cost of one chain
    step in plain decode steps that the measured speeds imply."""
    out: dict[str, Any] = {}
    accept = agg.get("accept_len")
    tps = agg.get("gen_tokens_per_s")
    running = agg.get("running_req")
    batch = max(float(running), 1.0) if isinstance(running, int | float) else 1.0
    ratio = baseline_ratio(tps, running, baseline)
    if ratio is not None:
        out["speedup_observed"] = ratio
    if accept is None or not isinstance(steps, int) or steps < 1:
        return out
    alpha = specmath.alpha_from_accept_len(accept, steps)
    out.update(alpha=alpha, saturation=specmath.saturation(accept, steps))
    if isinstance(draft_tokens, int):
        rate = specmath.draft_acceptance_rate(accept, draft_tokens)
        if rate is not None:
            out["draft_acceptance_rate"] = rate
    from spectui.core.specdec import advise_one

    per_request = tps / batch if isinstance(tps, int | float) and tps > 0 else None
    base_per_request = float(baseline) / batch if ratio is not None else None
    try:  # advise_one remembers its answers: every metrics window asks it again
        adv = advise_one(steps, min(max(accept, 1.0), steps + 1.0), per_request, base_per_request,
                         round(batch), max(10, steps), intervals=False)
    except Exception:  # the advisor refuses impossible inputs; alpha and saturation still hold
        return out
    cost = adv.cost
    if cost.source in ("baseline", "measured") and cost.intercept > 0:
        out["implied_cost"] = cost.slope / cost.intercept
    best = adv.row(adv.best_steps)  # the advisor's fastest depth (shallowest of a flat optimum)
    out.update(best_steps=best.steps,
               best_speedup=cost.speed(best.steps, best.accept_len) / cost.speed(0, 1.0),
               advice_steps=adv.recommend.steps,  # the advisor's one recommendation (0 = off): rules' fixes
               advice_basis="against the no-spec baseline" if cost.source in ("baseline", "measured")
               else "modelled: no baseline at this concurrency")
    return out


def finding_dict(finding: Any) -> dict[str, Any]:
    """An inspector finding (core.draft.Finding or its to_json() dict) as a plain dict."""
    return dict(finding.to_json() if hasattr(finding, "to_json") else finding)


def match_draft(clause: CDraft, findings: Sequence[Any]) -> dict[str, Any] | None:
    """The captures (m.finding...) of the first finding (Finding or dict) satisfying `clause`, else None."""
    for f in map(finding_dict, findings):
        if ((clause.codes is None or f.get("code") in clause.codes)
                and (clause.categories is None or f.get("category") in clause.categories)
                and (clause.severities is None or f.get("severity") in clause.severities)):
            evidence = [str(e) for e in f.get("evidence") or []]
            return {"finding": str(f.get("title", "")), "finding_fix": str(f.get("fix") or ""),
                    "finding_code": str(f.get("code", "")), "finding_evidence": "; ".join(evidence),
                    "_evidence": evidence}
    return None
