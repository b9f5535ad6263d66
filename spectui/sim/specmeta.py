"""Per-request and per-rank speculative fields, named as the emulated SGLang release names them.

Read from the released wheels (tokenizer_manager._calculate_spec_decoding_metrics, entrypoints/openai,
scheduler get_internal_state); docs/SIMULATOR.md "Endpoints" has the table:

  meta_info (native /generate), only once the request has finished (0.5.10+ read; docs/REFERENCE.md §4.4 below):
    ≤0.5.3          spec_verify_ct (on every meta_info)
    0.5.4 – 0.5.5   + spec_accept_rate, spec_accept_length
    0.5.6 – 0.5.9   + spec_accept_token_num, spec_draft_token_num
    0.5.10          + spec_accept_histogram
    0.5.11          spec_accepted_drafts, spec_proposed_drafts, spec_accept_histogram (renamed)
    0.5.12 – 0.5.20 spec_num_correct_drafts, spec_num_proposed_drafts, spec_correct_drafts_histogram,
                    and the 0.5.11 names kept as "backward-compat aliases"
    0.5.23          the 0.5.12 names only
  OpenAI responses: `sglext.spec_tokens_details` (SpecTokensDetails, zero-filled), only when the request
    sets "return_spec_tokens_details": true, from 0.5.20 (absent in 0.5.18); nothing in `usage`.
  /server_info internal_states[i]: avg_spec_accept_length (all releases). The cumulative counters
    spec_cumulative_num_accept_tokens / spec_cumulative_num_forward_ct / spec_counter_dp_rank are in no
    release read (0.5.10 – 0.5.23); the sim adds them only with --sim-spec-counters (a patched build).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spectui.sim.engine import EngineStats, SimRequest

Version = tuple[int, int, int]


def meta_info(req: SimRequest, v: Version, draft_tokens: int | None, *, finished: bool) -> dict[str, object]:
    meta: dict[str, object] = {"id": req.rid, "prompt_tokens": req.prompt_tokens,
                               "completion_tokens": req.generated, "cached_tokens": req.cached_tokens}
    if finished:
        meta["finish_reason"] = {"type": "length", "length": req.max_tokens}
    if draft_tokens is None:
        return meta
    if v <= (0, 5, 3):
        meta["spec_verify_ct"] = req.verify_ct
        return meta
    if finished and req.verify_ct > 0:  # SGLang: `recv_obj.spec_verify_ct[i] > 0`, finished requests only
        meta.update(spec_fields(req, v, draft_tokens))
    return meta


def spec_fields(req: SimRequest, v: Version, draft_tokens: int) -> dict[str, object]:
    proposed = req.verify_ct * (draft_tokens - 1)
    out: dict[str, object] = {}
    if proposed <= 0:
        return out
    out["spec_accept_rate"] = req.accepted_drafts / proposed
    out["spec_accept_length"] = req.generated / req.verify_ct  # bonus and the prefill token included
    hist = list(req.histogram)
    if v >= (0, 5, 12):
        out["spec_num_correct_drafts"] = req.accepted_drafts
        out["spec_num_proposed_drafts"] = proposed
    elif v >= (0, 5, 11):
        out["spec_accepted_drafts"] = req.accepted_drafts
        out["spec_proposed_drafts"] = proposed
    elif v >= (0, 5, 6):
        out["spec_accept_token_num"] = req.accepted_drafts
        out["spec_draft_token_num"] = proposed
    out["spec_verify_ct"] = req.verify_ct
    if (0, 5, 12) <= v <= (0, 5, 20):
        out["spec_accepted_drafts"] = req.accepted_drafts
        out["spec_proposed_drafts"] = proposed
    if v >= (0, 5, 12) and hist:
        out["spec_correct_drafts_histogram"] = hist
        if v <= (0, 5, 20):
            out["spec_accept_histogram"] = hist
    elif v >= (0, 5, 10) and hist:
        out["spec_accept_histogram"] = hist
    return out


def spec_tokens_details(meta: dict[str, object]) -> dict[str, object] | None:
    """SGLang's SpecTokensDetails (0.5.20+) from a finished meta_info: every field, absent ones zero-filled."""
    keys = ("spec_accept_rate", "spec_accept_length", "spec_cap_length", "spec_block_accept_length",
            "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_verify_ct",
            "spec_correct_drafts_histogram", "spec_cap_lens_histogram")
    if not any(k in meta for k in keys):
        return None
    zero: dict[str, object] = {"spec_accept_rate": 0.0, "spec_accept_length": 0.0, "spec_cap_length": 0.0,
                               "spec_block_accept_length": 0.0, "spec_num_correct_drafts": 0,
                               "spec_num_proposed_drafts": 0, "spec_verify_ct": 0,
                               "spec_correct_drafts_histogram": [], "spec_cap_lens_histogram": []}
    return {k: meta.get(k) or zero[k] for k in keys}


def has_spec_tokens_details(v: Version) -> bool:
    return v >= (0, 5, 20)


def rank_counters(stats: EngineStats, dp_rank: int | None) -> dict[str, object]:
    """The patched build's raw per-rank counters: added every verify round, never reset."""
    return {"spec_cumulative_num_accept_tokens": stats.spec_cum_accept_tokens,
            "spec_cumulative_num_forward_ct": stats.spec_cum_forward_ct,
            "spec_counter_dp_rank": dp_rank or 0}
