"""The simulator's decode model: how many tokens a verify round commits, and how long the round takes.

docs/SIMULATOR.md is the one place the model is written down (equations, parameters, defaults and their
sources, what is and is not modelled); this module implements exactly that and nothing else.

Acceptance. The draft's conditional acceptance decays with draft position, alpha_i = a1 r^(i-1) (clipped
to [0, 1]). SGLang keeps the `num_draft_tokens - 1` best draft nodes by the draft's cumulative score
(EAGLE-2; docs/SPECDEC.md §1.6) and verifies them as one tree; a chain (topk 1, draft tokens = steps + 1) is the
tree with one child per node. The target samples one token per level, so the round walks down the tree:
at depth i the draft's j-th ranked child is the accepted one with probability c(i, 1) = alpha_i and
c(i, j) = gamma * alpha_i (1 - alpha_i)^(j-1) for j >= 2 (a sibling covers the target mass the top-1 missed,
at efficiency gamma); the walk stops at the first level whose accepted token is not in the tree.
E[L] = 1 + sum over tree nodes of the product of c along the node's path (docs/SPECDEC.md §0, tree formula).

Time, in T1 = one plain decode step at batch 1 = 1 / baseline_tps, for B running requests:
    plain(B)  = 1 + BATCH_COST (B - 1)
    round(B)  = plain(B) + (TOKEN_COMPUTE + verify_cost) * B * (ndt - 1)    verify: B * ndt tokens
              + steps * DRAFT_COST * (1 + BATCH_COST (B * topk - 1))       draft: steps passes of B*topk
              + ROUND_OVERHEAD * plain(B)                                 non-overlapped spec loop
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

DEFAULT_DECAY = 0.97  # r: median of single-benchmark chain sweeps (SIMULATOR.md "Acceptance")
DEFAULT_VERIFY_COST = 0.026  # extra weight traffic of each further verified token (MoE), in T1 (seed fit)
TOKEN_COMPUTE = 1 / 256  # compute of one token in a forward, in T1 (H100 ridge point, SIMULATOR.md)
DRAFT_COST = 0.05  # c: one draft forward at batch 1, in T1 (1 EAGLE-3 layer + lm_head on a ~32B-active MoE)
ROUND_OVERHEAD = 1.46  # per-round work of the spec loop that plain decode overlaps, in plain steps (seed fit)
BATCH_COST = 0.015  # each further request in one forward (KV reads + its compute), in T1 (assumption)
SIBLING_EFFICIENCY = 0.45  # gamma (EAGLE chain vs tree, SIMULATOR.md "Trees")


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The effective speculative parameters (after SGLang's resolution); None = no speculation."""

    num_steps: int
    topk: int
    draft_tokens: int


@dataclass(frozen=True, slots=True)
class Node:
    """One draft node of the verified tree: the probability it is the accepted token at its level, given
    its parent was accepted, and its children in the draft's rank order."""

    accept: float
    children: tuple[Node, ...]


def alphas(a1: float, r: float, k: int) -> list[float]:
    """[alpha_1, ..., alpha_k], alpha_i = clip(a1 r^(i-1), 0, 1)."""
    return [min(1.0, max(0.0, a1 * r ** (i - 1))) for i in range(1, k + 1)]


@functools.cache
def draft_tree(a1: float, r: float, steps: int, topk: int, draft_tokens: int,
               gamma: float = SIBLING_EFFICIENCY) -> tuple[tuple[Node, ...], float]:
    """(the root's children, E[L]) for SGLang's tree: `steps` rounds of top-`topk` expansion of the best
    `topk` frontier nodes by cumulative draft score, then the best `draft_tokens - 1` nodes of the pool.

    The draft's score of a child is what it believes: alpha_i (1 - alpha_i)^(j-1) for rank j (a calibrated
    top-1, siblings sharing the rest); the target's acceptance is c(i, j) above. With topk 1 the pool is
    the chain itself."""
    a = alphas(a1, r, max(1, steps))
    pool: list[tuple[float, float, tuple[int, ...]]] = []  # (draft score, true path value, path of ranks)
    frontier: list[tuple[float, float, tuple[int, ...]]] = [(1.0, 1.0, ())]
    for depth in range(1, max(1, steps) + 1):
        ai = a[depth - 1]
        kids = []
        for score, value, path in frontier:
            for j in range(1, max(1, topk) + 1):
                share = (1 - ai) ** (j - 1)
                kids.append((score * ai * share, value * ai * (share if j == 1 else gamma * share), path + (j,)))
        kids.sort(key=lambda n: (-n[0], n[2]))
        pool.extend(kids[: max(1, topk)] if depth == 1 else kids)
        frontier = kids[: max(1, topk)]
    pool.sort(key=lambda n: (-n[0], n[2]))
    chosen = {path: value for _, value, path in pool[: max(1, draft_tokens - 1)]}
    chosen = {p: v for p, v in chosen.items() if all(p[:i] in chosen for i in range(1, len(p)))}  # connected

    def build(prefix: tuple[int, ...]) -> tuple[Node, ...]:
        kids = sorted(p for p in chosen if len(p) == len(prefix) + 1 and p[:-1] == prefix)
        out = []
        for p in kids:
            ai, j = a[len(p) - 1], p[-1]
            c = ai if j == 1 else gamma * ai * (1 - ai) ** (j - 1)
            out.append(Node(c, build(p)))
        return tuple(out)

    return build(()), 1.0 + sum(chosen.values())


@dataclass(frozen=True, slots=True)
class DecodeModel:
    baseline_tps: float
    alpha: float  # a1: acceptance of the first draft position
    spec: SpecConfig | None
    decay: float = DEFAULT_DECAY  # r
    verify_cost: float = DEFAULT_VERIFY_COST

    @property
    def step_s(self) -> float:
        """T1: one target decode step at batch 1, in simulated seconds."""
        return 1.0 / self.baseline_tps

    @property
    def depth(self) -> int:
        """The most drafts one round can accept: num_steps, and never more than the node budget."""
        assert self.spec is not None
        return max(1, min(self.spec.num_steps, self.spec.draft_tokens - 1))

    def _tree(self) -> tuple[tuple[Node, ...], float]:
        assert self.spec is not None
        s = self.spec
        return draft_tree(self.alpha, self.decay, self.depth, max(1, s.topk), s.draft_tokens)

    def expected_accept_len(self) -> float:
        """E[L] per request per round, bonus token included (SGLang's `accept len`)."""
        return 1.0 if self.spec is None else self._tree()[1]

    def sample_accept_len(self, rng: random.Random) -> int:
        """Tokens one request commits in one round: accepted drafts + the bonus token."""
        if self.spec is None:
            return 1
        level, n = self._tree()[0], 1
        while level:
            u, hit = rng.random(), None
            for child in level:  # the target samples one token: the children's outcomes exclude each other
                if u < child.accept:
                    hit = child
                    break
                u -= child.accept
            if hit is None:
                break
            n += 1
            level = hit.children
        return n

    def plain_round(self, batch: int) -> float:
        """One plain decode step at this batch, in T1."""
        return 1.0 + BATCH_COST * (max(1, batch) - 1)

    def round_units(self, batch: int) -> float:
        """One decode round (spec: draft + verify + overhead) at this batch, in T1."""
        b = max(1, batch)
        if self.spec is None:
            return self.plain_round(b)
        s = self.spec
        verify = self.plain_round(b) + (TOKEN_COMPUTE + self.verify_cost) * b * (s.draft_tokens - 1)
        draft = s.num_steps * DRAFT_COST * (1.0 + BATCH_COST * (b * max(1, s.topk) - 1))
        return verify + draft + ROUND_OVERHEAD * self.plain_round(b)

    def round_s(self, batch: int) -> float:
        """Wall time of one decode round at this batch size, simulated seconds."""
        return self.round_units(batch) * self.step_s

    def expected_tps(self, batch: int = 1) -> float:
        """Server decode tokens/s at this batch size (what the Decode line's gen throughput averages to)."""
        return batch * self.expected_accept_len() / self.round_s(batch)
