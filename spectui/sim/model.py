"""The simulator's decode model: how many tokens a verify round commits and how long the round takes.

Acceptance (SPECDEC §1.2, §1.6). Each drafted token is accepted with probability alpha, given that all
earlier ones were. A chain of k = num_steps drafted tokens commits L = accepted + 1 tokens per request
per round, so E[L] = (1 - alpha^(k+1)) / (1 - alpha); the sim samples L per request and round, which is
where the noise of a real interval mean comes from. A tree (topk > 1) cannot be deeper than num_steps,
nor than its node budget (num_draft_tokens - 1); nodes left over after the depth become siblings, which
rescue a level whose top-1 candidate missed: alpha_eff = alpha + (1 - alpha) * 0.3 * share, with share =
the fraction of levels that got a sibling. So trees are "a bit better than the chain", never deeper.

Cost (SPECDEC §1.4), in units of T1 = one target decode step at batch 1 = 1 / baseline_tps. A forward
pass over B sequences of n tokens each reads the weights and the KV cache (memory) and computes B*n tokens:
    m(B)        = 1 + 0.015 (B - 1)                                   memory part (weights + per-sequence KV)
    fwd(B, n)   = m(B) + (B n - 1) / 256                              plain decode is fwd(B, 1); fwd(1, 1) = 1
    T_round(B)  = fwd(B, ndt) + (num_steps c (1 + 0.1 (topk - 1)) + OVERHEAD) m(B)
with c = 0.15 (a draft forward per step; SGLang runs num_steps - 1 draft forwards + 1 draft-extend) and
OVERHEAD = 1.0: the per-round cost of the non-overlapped spec loop (tree build, verify bookkeeping,
sampling) on a large MoE target. The two constants are fitted to the seed incident (Kimi-K2.5, bs 1,
baseline 90 tok/s, alpha 0.8): steps 1 / topk 1 (draft tokens forced to 2) gives L = 1.8 and
90 * 1.8 / 2.15 = 75 tok/s, below the baseline (the seed measured 56.8 at L ~1.6); steps 15 gives L = 4.86
and 90 * 4.86 / 4.31 = 101 tok/s, above it. The verify width (B * ndt tokens) makes the gain shrink as the
batch grows, as SPECDEC §1.4 describes. Without speculation a round is fwd(B, 1) and commits 1 token.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DRAFT_COST = 0.15  # c: one draft forward, in target decode steps
ROUND_OVERHEAD = 1.0  # fixed cost of one spec round, in target decode steps
BATCH_COST = 0.015  # extra decode cost per additional request while memory-bound
COMPUTE_BOUND_TOKENS = 256  # tokens one forward computes in the time of one memory-bound step
TREE_SIBLING_RESCUE = 0.3  # probability a sibling rescues a level whose top-1 candidate missed


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The effective speculative parameters (after SGLang's resolution); None = no speculation."""

    num_steps: int
    topk: int
    draft_tokens: int


@dataclass(frozen=True, slots=True)
class DecodeModel:
    baseline_tps: float
    alpha: float
    spec: SpecConfig | None

    @property
    def step_s(self) -> float:
        """T1: one target decode step at batch 1, in simulated seconds."""
        return 1.0 / self.baseline_tps

    @property
    def depth(self) -> int:
        assert self.spec is not None
        return max(1, min(self.spec.num_steps, self.spec.draft_tokens - 1))

    @property
    def alpha_eff(self) -> float:
        if self.spec is None or self.spec.topk <= 1:
            return self.alpha
        spare = max(0, self.spec.draft_tokens - 1 - self.depth)
        share = min(1.0, spare / (self.depth * (self.spec.topk - 1)))
        return self.alpha + (1 - self.alpha) * TREE_SIBLING_RESCUE * share

    def expected_accept_len(self) -> float:
        if self.spec is None:
            return 1.0
        a, k = self.alpha_eff, self.depth
        return (1 - a ** (k + 1)) / (1 - a)

    def sample_accept_len(self, rng: random.Random) -> int:
        """Tokens one request commits in one round (accepted drafts + the bonus token)."""
        if self.spec is None:
            return 1
        a, n = self.alpha_eff, 1
        while n <= self.depth and rng.random() < a:
            n += 1
        return n

    def round_s(self, batch: int) -> float:
        """Wall time of one decode round (spec: draft + verify) at this batch size, simulated seconds."""
        b = max(1, batch)
        memory = 1 + BATCH_COST * (b - 1)
        if self.spec is None:
            return (memory + (b - 1) / COMPUTE_BOUND_TOKENS) * self.step_s
        verify = memory + (b * self.spec.draft_tokens - 1) / COMPUTE_BOUND_TOKENS
        draft = self.spec.num_steps * DRAFT_COST * (1 + 0.1 * (self.spec.topk - 1))
        return (verify + (draft + ROUND_OVERHEAD) * memory) * self.step_s

    def expected_tps(self, batch: int = 1) -> float:
        """Server decode tokens/s at this batch size (what the Decode line's gen throughput averages to)."""
        return batch * self.expected_accept_len() / self.round_s(batch)
