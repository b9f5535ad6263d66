"""`spectui advise` model: predicted accept length and per-request speed by chain depth (pure, stdlib only).

Accept length: spectui.core.specdec.fit (alpha_i = a1 r^(i-1), E[L](k) = 1 + sum_i prod_{j<=i} alpha_j).

Cost (docs/SPECDEC.md §1.4 serving model, topk 1, ndt = k + 1, batch B running requests):
    t_round(k, B) = t_target + t_overhead + k * t_draft + (k + 1) * B * t_vtok      (speculative round)
    t_base(B)     = t_target + B * t_vtok                                             (plain decode step)
so t_round(k) = intercept + k * slope with slope = t_draft + B * t_vtok: verify work grows with depth times
the running requests, which is the serving-reality note (at large B speed -> E[L]/(k+1) x baseline < 1).
Per-request speed(k) = E[L](k) / t_round(k); no speculation runs at 1 / t_base.

What the cost is inferred from, best first (`CostModel.source`):
  measured  two or more depths with per-request tok/s: least-squares line through t_round = L / tps;
  baseline  one depth and the no-spec per-request tok/s at the same concurrency: intercept = t_base,
            slope = (t_round(k0) - t_base) / k0 (any fixed spec overhead is charged per step: conservative);
  assumed   one depth, no baseline: t_round(k0) split with the prior relative step cost c(B) below;
  prior     no speed at all: unit time, the same c(B); ranks depths, but tokens_per_s stays None.
c(B) = (0.10 + 0.055 B) / (1 + 0.055 B): a 1-layer draft costs ~0.1 target step and every extra verify
token ~0.055 (docs/SPECDEC.md §1.4: vLLM #20780 fit, ~0.144 per step at bs 1); it reaches 0.67 at bs 32 and 0.8 at
bs 64, where SGLang's adaptive defaults allow only steps {0, 1} and turn speculation off (§5.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spectui.core.specdec import fit as _fit
from spectui.core.specdec.fit import Observation, expected_accept_len
from spectui.errors import InputError

__all__ = [
    "Advice", "CostModel", "DepthVerdict", "ModelInfo", "Observed", "Prediction", "Recommendation",
    "advise", "advise_one", "ceiling", "depth_advice", "expected_accept_len", "prior_step_cost",
]

PRIOR_DRAFT_COST = 0.10  # one draft forward, in target decode steps (docs/SPECDEC.md §1.4)
PRIOR_VERIFY_TOKEN_COST = 0.055  # one extra verify token per request, in target weight-read steps
TIE = 0.02  # depths within 2 % of the fastest count as equally fast (far inside the speed intervals)


def prior_step_cost(batch: int | None) -> float:
    """c(B): prior cost of one more chain step relative to a plain decode step at batch B."""
    b = max(batch or 1, 1)
    return (PRIOR_DRAFT_COST + b * PRIOR_VERIFY_TOKEN_COST) / (1.0 + b * PRIOR_VERIFY_TOKEN_COST)


def ceiling(steps: int, topk: int = 1, draft_tokens: int | None = None) -> int:
    """Most tokens one verify round can commit: 1 + min(steps, ndt - 1); topk 1 forces ndt = steps + 1."""
    if steps <= 0:
        return 1
    if topk <= 1 or draft_tokens is None:
        return steps + 1
    return 1 + max(min(steps, draft_tokens - 1), 0)


@dataclass(frozen=True, slots=True)
class Observed:
    """A measurement at one chain depth: accept len, and optionally per-request tok/s there."""

    steps: int
    accept_len: float
    tokens_per_s: float | None = None
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class CostModel:
    intercept: float  # seconds (or units) of a speculative round at k -> 0
    slope: float  # per extra chain step
    baseline_tps: float  # per-request tok/s without speculation (measured, or implied by the split)
    source: str  # measured | baseline | assumed | prior
    batch: int | None = None

    @classmethod
    def from_components(cls, t_target: float, t_draft: float, t_verify_tok: float, batch: int,
                        t_overhead: float = 0.0) -> CostModel:
        """The serving model's parameters directly (module docstring); source 'measured'."""
        t_base = t_target + batch * t_verify_tok
        return cls(t_base + t_overhead, t_draft + batch * t_verify_tok, 1.0 / t_base, "measured", batch)

    def round_time(self, k: int) -> float:
        return self.intercept + k * self.slope if k > 0 else 1.0 / self.baseline_tps

    def speed(self, k: int, accept_len: float) -> float:
        return 1.0 / self.round_time(0) if k <= 0 else accept_len / self.round_time(k)

    @property
    def known(self) -> bool:
        return self.source != "prior"


def infer_cost(observed: Sequence[Observed], baseline_tps: float | None, batch: int | None) -> CostModel:
    """CostModel from the measurements, by the rules in the module docstring."""
    rounds = [(o.steps, o.accept_len / o.tokens_per_s) for o in observed if o.tokens_per_s]
    depths = {k for k, _ in rounds}
    if len(depths) >= 2:
        n = len(rounds)
        mk, mt = sum(k for k, _ in rounds) / n, sum(t for _, t in rounds) / n
        var = sum((k - mk) ** 2 for k, _ in rounds)
        slope = max(sum((k - mk) * (t - mt) for k, t in rounds) / var, 0.0)
        intercept = max(mt - slope * mk, 1e-12)
        base = baseline_tps if baseline_tps else 1.0 / intercept
        return CostModel(intercept, slope, base, "measured", batch)
    if rounds:
        k0 = rounds[0][0]
        t0 = sum(t for _, t in rounds) / len(rounds)
        if baseline_tps:
            t_base = 1.0 / baseline_tps
            return CostModel(t_base, max((t0 - t_base) / k0, 0.0), baseline_tps, "baseline", batch)
        c = prior_step_cost(batch)
        t_base = t0 / (1.0 + k0 * c)
        return CostModel(t_base, c * t_base, 1.0 / t_base, "assumed", batch)
    c = prior_step_cost(batch)
    return CostModel(1.0, c, 1.0, "prior", batch)  # relative units: t_base = 1


@dataclass(frozen=True, slots=True)
class ModelInfo:
    a1: float
    r: float
    observations: tuple[tuple[int, float], ...]
    prior: bool

    def to_json(self) -> dict[str, Any]:
        return {"a1": round(self.a1, 4), "r": round(self.r, 4),
                "observations": [[k, round(v, 4)] for k, v in self.observations], "prior": self.prior}


@dataclass(frozen=True, slots=True)
class Prediction:
    steps: int
    accept_len: float
    low: float
    high: float
    tokens_per_s: float | None = None
    speedup: float | None = None  # x no speculation, per request, under the cost model (at accept_len)
    speedup_low: float | None = None  # at `low` / `high`: the interval the accept-length band gives
    speedup_high: float | None = None
    measured_speedup: float | None = None  # measured at this depth against a measured/given baseline
    running: bool = False  # the running server's config

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": self.steps, "accept_len": round(self.accept_len, 3),
                               "low": round(self.low, 3), "high": round(self.high, 3)}
        if self.tokens_per_s is not None:
            out["tokens_per_s"] = round(self.tokens_per_s, 2)
        if self.speedup is not None:
            out["speedup"] = {"value": round(self.speedup, 3), "low": round(self.speedup_low or self.speedup, 3),
                              "high": round(self.speedup_high or self.speedup, 3)}
        if self.measured_speedup is not None:
            out["measured_speedup"] = round(self.measured_speedup, 3)
        if self.running:
            out["running"] = True
        return out

    @property
    def best_speedup(self) -> float | None:
        """What this depth is known to give: the measurement where there is one (it wins), else the model."""
        return self.measured_speedup if self.measured_speedup is not None else self.speedup


@dataclass(frozen=True, slots=True)
class Recommendation:
    """steps/topk/num_draft_tokens 0/0/0 (bench_speculative's baseline) = turn speculation off."""

    steps: int
    topk: int
    num_draft_tokens: int
    why: str

    @property
    def off(self) -> bool:
        return self.steps == 0

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "topk": self.topk, "num_draft_tokens": self.num_draft_tokens,
                "why": self.why}


@dataclass(frozen=True, slots=True)
class Advice:
    model: ModelInfo
    predicted: tuple[Prediction, ...]  # steps 1..max_steps
    recommend: Recommendation
    next_to_measure: int | None
    cost: CostModel
    speedup: float  # best option's speed / no-spec speed under `cost` (1.0 when off)
    baseline_source: str = "modelled"  # measured | given | modelled: where the no-spec speed comes from
    best_steps: int = 0  # the fastest depth (within TIE), also when `recommend` is off
    measurement_wins: tuple[str, ...] = ()  # where a measured speedup and the model's disagree

    def row(self, steps: int) -> Prediction:
        return self.predicted[steps - 1]

    def to_json(self) -> dict[str, Any]:
        base = self.cost.baseline_tps if self.cost.known else None
        return {"model": self.model.to_json(), "predicted": [p.to_json() for p in self.predicted],
                "recommend": self.recommend.to_json(), "next_to_measure": {"steps": self.next_to_measure},
                "baseline": {"source": self.baseline_source,
                             "tokens_per_s": round(base, 2) if base is not None else None,
                             "cost": self.cost.source},
                "measurement_wins": list(self.measurement_wins)}


def _validate(observed: Iterable[Observed | tuple[Any, ...]]) -> list[Observed]:
    out = []
    for item in observed:
        o = item if isinstance(item, Observed) else Observed(*item)
        if not isinstance(o.steps, int) or o.steps < 1:
            raise InputError(f"observed steps must be a whole number >= 1, got {o.steps!r}")
        if not 1.0 <= o.accept_len <= o.steps + 1.01:
            raise InputError(f"accept len {o.accept_len} is impossible at steps {o.steps}: "
                             f"it lies between 1 and steps + 1 = {o.steps + 1}")
        if o.tokens_per_s is not None and not o.tokens_per_s > 0:
            raise InputError(f"tokens/s must be positive, got {o.tokens_per_s}")
        out.append(Observed(o.steps, min(o.accept_len, o.steps + 1.0), o.tokens_per_s, o.weight))
    if not out:
        raise InputError("give at least one observed depth as STEPS:ACCEPT_LEN")
    return out


def _cost_note(cost: CostModel) -> str:
    return {"measured": "round times measured at several depths",
            "baseline": "round time measured at one depth against the no-spec baseline",
            "assumed": f"one measured round split with an assumed step cost {prior_step_cost(cost.batch):.2f}"
                       " (measure a no-spec baseline to know)",
            "prior": f"no speed measured: assumed step cost {prior_step_cost(cost.batch):.2f} of a decode step"
            }[cost.source]


def _next_to_measure(rows: Sequence[Prediction], cost: CostModel, best: int, seen: set[int]) -> int | None:
    """Among unobserved depths that could still beat the choice (optimistic speed, at `high`, above the
    choice's pessimistic speed), the one with the highest optimistic speed; else the nearest unobserved."""
    bar = cost.speed(0, 1.0) if best == 0 else cost.speed(best, rows[best - 1].low)
    unseen = [p for p in rows if p.steps not in seen]
    rivals = [p for p in unseen if cost.speed(p.steps, p.high) >= bar]
    if rivals:
        return min(rivals, key=lambda p: (-cost.speed(p.steps, p.high), abs(p.steps - best), p.steps)).steps
    return min(unseen, key=lambda p: (abs(p.steps - best), p.steps)).steps if unseen else None


def _measured(obs: Sequence[Observed], baseline: float | None) -> dict[int, float]:
    """Per depth, the measured speedup (mean per-request tok/s there / the baseline), when both are known."""
    if not baseline:
        return {}
    by: dict[int, list[float]] = {}
    for o in obs:
        if o.tokens_per_s:
            by.setdefault(o.steps, []).append(o.tokens_per_s)
    return {k: sum(v) / len(v) / baseline for k, v in by.items()}


def advise(observed: Iterable[Observed | tuple[Any, ...]], baseline_per_request_tps: float | None = None,
           running: int | None = None, max_steps: int = 10, rel_noise: float = _fit.REL_NOISE,
           intervals: bool = True, running_steps: int | None = None, baseline_source: str | None = None) -> Advice:
    """The whole `spectui advise` answer from observed depths (Observed or (steps, accept_len[, tps])).

    Every row carries `speedup` (x no speculation, per request, at `running` requests) with the interval
    its accept-length band gives; `running_steps` (the running server's depth) is always a row. Where a
    depth's speedup was measured against a measured or given baseline, the measurement wins: it decides
    the recommendation, and a disagreement with the model is said in `measurement_wins`.
    `baseline_source`: measured (a bench) | given (--baseline-tps); default given with a baseline, else
    modelled (the no-spec speed the cost model implies).

    `intervals=False` skips the intervals (low = high = the prediction): the rules need only the best depth
    and its speed, and the intervals are nearly all of the cost (a refit per perturbation)."""
    obs = _validate(observed)
    if max_steps < 1:
        raise InputError("--max-steps must be >= 1")
    if baseline_per_request_tps is not None and not baseline_per_request_tps > 0:
        raise InputError(f"baseline tokens/s must be positive, got {baseline_per_request_tps}")
    if running_steps is not None and running_steps >= 1:
        max_steps = max(max_steps, running_steps)
    f = _fit.fit(Observation(o.steps, o.accept_len, o.weight) for o in obs)
    band = _fit.intervals(f, max_steps, rel_noise) if intervals else None
    cost = infer_cost(obs, baseline_per_request_tps, running)
    base_speed = cost.speed(0, 1.0)
    measured = _measured(obs, baseline_per_request_tps)
    rows = []
    for k in range(1, max_steps + 1):
        el = f.accept_len(k)
        low, high = (min(band[k][0], el), max(band[k][1], el)) if band is not None else (el, el)
        rows.append(Prediction(k, el, low, high, cost.speed(k, el) if cost.known else None,
                               cost.speed(k, el) / base_speed, cost.speed(k, low) / base_speed,
                               cost.speed(k, high) / base_speed, measured.get(k), k == running_steps))
    wins = tuple(f"steps {p.steps}: measured {p.measured_speedup:.2f}x, the model says {p.speedup:.2f}x "
                 f"[{p.speedup_low:.2f}-{p.speedup_high:.2f}]: the measurement wins"
                 for p in rows if p.measured_speedup is not None and p.speedup is not None
                 and abs(p.measured_speedup - p.speedup) > max(0.03, (p.speedup_high or 0) - (p.speedup_low or 0)))
    # The shallowest depth within TIE of the fastest: a flat optimum is no reason to go deeper, and two
    # windows of the same server then name the same depth (the rules' and `advise`'s answers agree).
    top = max(p.best_speedup or 0.0 for p in rows)
    best = min((p for p in rows if (p.best_speedup or 0.0) >= top * (1.0 - TIE)), key=lambda p: p.steps)
    ratio = best.best_speedup or 0.0
    note = _cost_note(cost) + ("; " + "; ".join(wins) if wins else "")
    if ratio <= 1.0:
        rec = Recommendation(0, 0, 0, f"every depth 1-{max_steps} is predicted slower than no speculation"
                                      f" (best: steps {best.steps} at {ratio:.2f}x); turn speculation off at"
                                      f" this concurrency; {note}")
        chosen, ratio = 0, 1.0
    else:
        chosen = best.steps
        speed = f" {best.tokens_per_s:.1f} tok/s per request," if best.tokens_per_s is not None else ""
        src = baseline_source or ("given" if baseline_per_request_tps else "modelled")
        base = f"{src} no-spec baseline" if src != "modelled" else "modelled no-spec speed"
        what = "measured" if best.measured_speedup is not None else "predicted"
        rec = Recommendation(chosen, 1, chosen + 1,
                             f"steps {chosen} maximises {what} per-request speed:{speed} accept len"
                             f" {best.accept_len:.2f} [{best.low:.2f}-{best.high:.2f}], {ratio:.2f}x the"
                             f" {base}; {note}")
    model = ModelInfo(f.a1, f.r, tuple((o.steps, o.accept_len) for o in f.observations), f.prior)
    nxt = _next_to_measure(rows, cost, chosen, {o.steps for o in f.observations})
    source = baseline_source or ("given" if baseline_per_request_tps else "modelled")
    return Advice(model, tuple(rows), rec, nxt, cost, ratio, source, best.steps, wins)


def _sig(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else float(f"{x:.{digits}g}")


def advise_one(steps: int, accept_len: float, per_request_tps: float | None = None,
               baseline_per_request_tps: float | None = None, running: int | None = None,
               max_steps: int = 10, intervals: bool = True) -> Advice:
    """`advise` for one observed depth, as the rules ask it on every metrics window: the inputs are rounded
    (accept len to 0.01 — the log prints two decimals —, speeds to 3 significant digits, far inside the
    model's interval) and the answer is remembered, so a window that says what the last one said costs a
    dictionary lookup instead of a refit (~12 ms)."""
    return _advise_one(steps, round(accept_len, 2), _sig(per_request_tps), _sig(baseline_per_request_tps),
                       running, max_steps, intervals)


@lru_cache(maxsize=4096)
def _advise_one(steps: int, accept_len: float, per_request_tps: float | None,
                baseline_per_request_tps: float | None, running: int | None, max_steps: int,
                intervals: bool) -> Advice:
    return advise([Observed(steps, accept_len, per_request_tps)], baseline_per_request_tps, running, max_steps,
                  intervals=intervals)


@dataclass(frozen=True, slots=True)
class DepthVerdict:
    """Short depth advice for the rules: best steps (0 = off) and whether changing depth pays."""

    current_steps: int
    steps: int
    accept_len: float | None  # predicted at `steps` (None when off)
    low: float | None
    high: float | None
    direction: str  # deeper | shallower | keep | off
    gain: float  # predicted speed at `steps` / at current_steps (same cost model)
    speedup: float  # predicted speed at `steps` / no speculation
    cost_source: str
    why: str


def depth_advice(observed_steps: int, observed_accept_len: float, per_request_tps: float | None = None,
                 baseline_per_request_tps: float | None = None, running: int | None = None,
                 max_steps: int = 10, intervals: bool = True) -> DepthVerdict:
    """The advisor applied to one observed depth (what a log's live config gives)."""
    adv = advise_one(observed_steps, observed_accept_len, per_request_tps, baseline_per_request_tps, running,
                     max(max_steps, observed_steps), intervals)
    cur = adv.row(observed_steps)
    k = adv.recommend.steps
    cur_speed = adv.cost.speed(observed_steps, cur.accept_len)
    if k == 0:
        return DepthVerdict(observed_steps, 0, None, None, None, "off", adv.cost.speed(0, 1.0) / cur_speed,
                            1.0, adv.cost.source, adv.recommend.why)
    row = adv.row(k)
    direction = "keep" if k == observed_steps else ("deeper" if k > observed_steps else "shallower")
    return DepthVerdict(observed_steps, k, row.accept_len, row.low, row.high, direction,
                        adv.cost.speed(k, row.accept_len) / cur_speed, adv.speedup, adv.cost.source,
                        adv.recommend.why)
