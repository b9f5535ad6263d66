"""Accept-length model for a speculative chain, its fit, and its prediction intervals (pure, stdlib only).

Model (docs/SPECDEC.md §1.2, per-position form): the conditional acceptance at draft position i (1-based) decays
geometrically, alpha_i = a1 * r**(i-1), clipped to [0, 1], and a chain of k drafted tokens commits on
average E[L](k) = 1 + sum_{i<=k} prod_{j<=i} alpha_j tokens per verify round (bonus token included).
r = 1 is the i.i.d. case of Leviathan et al.; r < 1 is the depth decay every public sweep shows.

Fit: (a1, r) minimise the weighted sum of squared relative residuals (E[L](k_n) - L_n) / L_n over the
observed depths, searched on a grid and refined by nested golden sections (deterministic). With one
observed depth, r is fixed at the prior 0.95 and a1 solves E[L](k0) = L0 exactly.

Intervals: with one depth, the envelope over r in the range public sweeps fit (0.88-1.0) and the observed
L0 moved by +-rel_noise; with two or more depths, the envelope of refits after moving the observations by
+-band in level and tilt patterns, band = max(rel_noise, 2 x the residual scale).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

PRIOR_R = 0.95
# r fitted to public sweeps (docs/SPECDEC.md §2.3 SpecBundle rows, §2.5 vLLM #20780 EAGLE-1/EAGLE-3 chains)
PRIOR_R_RANGE = (0.88, 1.0)
A1_BOUNDS = (1e-4, 1.0)
R_BOUNDS = (0.30, 1.05)
REL_NOISE = 0.02  # relative uncertainty of one observed accept len (pooled ~40-round log means)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def accept_len_curve(a1: float, r: float, k_max: int) -> list[float]:
    """[E[L](0), E[L](1), ..., E[L](k_max)] for alpha_i = clip(a1 * r**(i-1), 0, 1)."""
    out, prod, total = [1.0], 1.0, 1.0
    for i in range(1, k_max + 1):
        prod *= min(max(a1 * r ** (i - 1), 0.0), 1.0)
        total += prod
        out.append(total)
    return out


def expected_accept_len(a1: float, r: float, k: int) -> float:
    """E[L](k) = 1 + sum_{i<=k} prod_{j<=i} clip(a1 r^(j-1), 0, 1); k = drafted tokens (chain steps)."""
    if k < 0:
        raise ValueError("k must be >= 0")
    return accept_len_curve(a1, r, k)[k]


@dataclass(frozen=True, slots=True)
class Observation:
    """One observed chain depth: steps drafted per round, mean accept len there, and its weight."""

    steps: int
    accept_len: float
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Fit:
    a1: float
    r: float
    observations: tuple[Observation, ...]  # one per distinct depth, sorted by steps
    prior: bool  # True: r was not fitted (one observed depth), it is PRIOR_R

    def accept_len(self, k: int) -> float:
        return expected_accept_len(self.a1, self.r, k)


def merge_observations(obs: Iterable[Observation]) -> tuple[Observation, ...]:
    """One observation per depth: weighted mean accept len, summed weight; sorted by steps."""
    groups: dict[int, list[Observation]] = {}
    for o in obs:
        groups.setdefault(o.steps, []).append(o)
    merged = []
    for k in sorted(groups):
        g = groups[k]
        w = sum(o.weight for o in g)
        merged.append(Observation(k, sum(o.accept_len * o.weight for o in g) / w, w))
    return tuple(merged)


def _solve_a1(k: int, target: float, r: float) -> float:
    """a1 in A1_BOUNDS with E[L](k; a1, r) = target (E[L] increases with a1); clipped at the bounds."""
    lo, hi = A1_BOUNDS
    if expected_accept_len(hi, r, k) <= target:
        return hi
    if expected_accept_len(lo, r, k) >= target:
        return lo
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_accept_len(mid, r, k) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _golden_min(f: Callable[[float], float], lo: float, hi: float, iters: int = 48) -> float:
    a, b = lo, hi
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2


def _objective(obs: Sequence[Observation], k_max: int) -> Callable[[float, float], float]:
    def sse(a1: float, r: float) -> float:
        curve = accept_len_curve(a1, r, k_max)
        s = sum(o.weight * ((curve[o.steps] - o.accept_len) / o.accept_len) ** 2 for o in obs)
        return s + 1e-9 * (r - PRIOR_R) ** 2  # tie-break only (flat objective when saturated)

    return sse


def _fit_free(obs: Sequence[Observation]) -> tuple[float, float]:
    """Least squares over (a1, r) in the bounds: grid, then golden section on r over the a1 profile."""
    k_max = max(o.steps for o in obs)
    sse = _objective(obs, k_max)
    grid = ((sse(a / 50, r / 100), a / 50, r / 100)
            for a in range(1, 51) for r in range(round(R_BOUNDS[0] * 100), round(R_BOUNDS[1] * 100) + 1))
    _, a0, r0 = min(grid)

    def best_a1(r: float) -> float:
        return _golden_min(lambda a: sse(a, r), max(A1_BOUNDS[0], a0 - 0.1), min(A1_BOUNDS[1], a0 + 0.1))

    r = _golden_min(lambda r: sse(best_a1(r), r), max(R_BOUNDS[0], r0 - 0.02), min(R_BOUNDS[1], r0 + 0.02))
    a1 = best_a1(r)
    if sse(a0, r0) < sse(a1, r):  # never worse than the grid point
        a1, r = a0, r0
    return a1, r


def fit(observations: Iterable[Observation]) -> Fit:
    """Fit (a1, r) to observed (steps, accept_len); one distinct depth keeps r at PRIOR_R."""
    obs = merge_observations(observations)
    if not obs:
        raise ValueError("no observations")
    if len(obs) == 1:
        o = obs[0]
        return Fit(_solve_a1(o.steps, o.accept_len, PRIOR_R), PRIOR_R, obs, prior=True)
    a1, r = _fit_free(obs)
    return Fit(a1, r, obs, prior=False)


def _clip_len(value: float, k: int) -> float:
    return min(max(value, 1.0), k + 1.0)


def residual_scale(f: Fit) -> float:
    """Relative residual standard error of a free fit (0 unless more depths than parameters)."""
    n = len(f.observations)
    if f.prior or n <= 2:
        return 0.0
    curve = accept_len_curve(f.a1, f.r, f.observations[-1].steps)
    rss = sum(((curve[o.steps] - o.accept_len) / o.accept_len) ** 2 for o in f.observations)
    return math.sqrt(rss / (n - 2))


def _patterns(n: int) -> list[tuple[int, ...]]:
    """Level shifts (all +, all -) and tilts (+ up to a split, - after, and the reverse)."""
    out = [(1,) * n, (-1,) * n]
    for j in range(1, n):
        out.append((1,) * j + (-1,) * (n - j))
        out.append((-1,) * j + (1,) * (n - j))
    return out


def intervals(f: Fit, k_max: int, rel_noise: float = REL_NOISE) -> list[tuple[float, float]]:
    """(low, high) of E[L](k) for k = 0..k_max (index = steps); see the module docstring."""
    curves = [accept_len_curve(f.a1, f.r, k_max)]
    if f.prior:
        o = f.observations[0]
        lo_r, hi_r = PRIOR_R_RANGE
        rs = [lo_r + (hi_r - lo_r) * i / 24 for i in range(25)]
        for rel in (-rel_noise, 0.0, rel_noise):
            target = _clip_len(o.accept_len * (1 + rel), o.steps)
            curves += [accept_len_curve(_solve_a1(o.steps, target, r), r, k_max) for r in rs]
    else:
        band = max(rel_noise, 2.0 * residual_scale(f))
        for signs in _patterns(len(f.observations)):
            moved = [Observation(o.steps, _clip_len(o.accept_len * (1 + s * band), o.steps), o.weight)
                     for o, s in zip(f.observations, signs, strict=True)]
            a1, r = _fit_free(moved)
            curves.append(accept_len_curve(a1, r, k_max))
    return [(min(c[k] for c in curves), max(c[k] for c in curves)) for k in range(k_max + 1)]
