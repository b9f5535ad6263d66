"""Accept-length theory for chain speculative decoding (docs/SPECDEC.md §1.2–1.8): pure functions, no state.

Notation: k = drafted tokens per round (SGLang `speculative_num_steps` with topk 1), alpha = per-token
acceptance probability, c = cost of one draft forward in target decode steps, L = accept length
(tokens committed per verify round, bonus token included).
"""

from __future__ import annotations

from dataclasses import dataclass

from spectui.core.versions import version_tuple


def expected_accept_len(alpha: float, k: int) -> float:
    """E[L] = (1 - alpha^(k+1)) / (1 - alpha): Leviathan et al. 2023, Eq. (1); k+1 when alpha = 1."""
    if k < 0:
        raise ValueError("k must be >= 0")
    alpha = min(max(alpha, 0.0), 1.0)
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def alpha_from_accept_len(accept_len: float, k: int, iters: int = 60) -> float:
    """Invert E[L] for alpha by bisection (E[L] is increasing in alpha on [0, 1)); docs/SPECDEC.md §1.7.

    L >= k+1 only bounds alpha from below (saturation), so it returns 1.0 there.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if accept_len >= k + 1:
        return 1.0
    if accept_len <= 1.0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(iters):
        mid = (lo + hi) / 2
        if expected_accept_len(mid, k) < accept_len:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def chain_depth(algorithm: object, num_steps: object, draft_tokens: object) -> int | None:
    """Drafted positions per verify round along one chain, as SGLang runs the algorithm: NGRAM verifies
    `speculative_num_draft_tokens` tokens (ndt - 1 drafted from the n-gram trie, plus the bonus; its log's
    accept rate is (accept len - 1) / (ndt - 1)), whatever `speculative_num_steps` says; the EAGLE family,
    MTP and standalone drafts run `speculative_num_steps` draft forwards. None when the config cannot say."""
    algo = str(algorithm or "").upper()
    if algo in ("NGRAM", "LOOKAHEAD"):
        return draft_tokens - 1 if isinstance(draft_tokens, int) and draft_tokens >= 2 else None
    return num_steps if isinstance(num_steps, int) and num_steps >= 1 else None


def accept_len_ceiling(num_steps: int) -> int:
    """The most a verify round can commit: every drafted token plus the bonus token."""
    return num_steps + 1


def speedup(alpha: float, k: int, cost: float) -> float:
    """Leviathan Thm 3.8 wall-time speedup: E[L] / (1 + k c) (verify of k+1 tokens ~ one decode step)."""
    return expected_accept_len(alpha, k) / (1.0 + k * cost)


@dataclass(frozen=True, slots=True)
class DepthAdvice:
    """The depth that maximises the modelled speedup, and that speedup (< 1 means no depth pays)."""

    steps: int
    speedup: float
    accept_len: float


def best_depth(alpha: float, cost: float, max_steps: int = 32) -> DepthAdvice:
    """Scan k = 1..max_steps for the best S(k); the curve is unimodal but flat near the top (§1.5)."""
    best = DepthAdvice(1, speedup(alpha, 1, cost), expected_accept_len(alpha, 1))
    for k in range(2, max_steps + 1):
        s = speedup(alpha, k, cost)
        if s > best.speedup + 1e-12:
            best = DepthAdvice(k, s, expected_accept_len(alpha, k))
    return best


def implied_draft_cost(accept_len: float, k: int, observed_speedup: float) -> float | None:
    """Solve L / (1 + k c) = observed speedup for c: the per-draft-token cost this server actually pays.

    None when the observation carries no information (no speedup measured, or k < 1).
    """
    if observed_speedup <= 0 or k < 1:
        return None
    return max((accept_len / observed_speedup - 1.0) / k, 0.0)


def draft_acceptance_rate(accept_len: float, num_draft_tokens: int) -> float | None:
    """Fraction of proposed drafts accepted, (L - 1) / (ndt - 1): SGLang >= 0.5.12's "accept rate" and
    vLLM's "Avg Draft acceptance rate". Recomputed because the printed field changed meaning (§1.8)."""
    if num_draft_tokens < 2:
        return None
    return (accept_len - 1.0) / (num_draft_tokens - 1)


def printed_accept_rate(accept_len: float, num_steps: int, num_draft_tokens: int, version: str) -> float:
    """What SGLang `version` prints as "accept rate" for this accept len (docs/REFERENCE.md §3.2 table)."""
    parts = version_tuple(version)
    if parts < (0, 5, 6):
        return accept_len / (num_steps + 1)
    if parts < (0, 5, 12):
        return accept_len / (num_draft_tokens or num_steps + 1)
    return (accept_len - 1.0) / max(num_draft_tokens - 1, 1)


def saturation(accept_len: float, num_steps: int) -> float:
    """(L - 1) / steps: 1.0 means every drafted token was accepted; > ~0.75 says go deeper (§6)."""
    return (accept_len - 1.0) / num_steps if num_steps > 0 else 0.0

