"""The rule language's fixed vocabulary (categories, names expressions may read): no pydantic, so the
engine and a cached rule set load without building the schema (spectui.core.rules.schema)."""

from __future__ import annotations

import re
from typing import Literal

CATEGORIES = (
    "unrecognized-argument", "invalid-argument", "silent-override", "low-accept-length",
    "spec-slower-than-baseline", "oom", "nccl", "cuda-graph", "weight-load", "hidden-state-mismatch",
    "crash", "port-in-use", "capacity", "other",
)
Category = Literal[
    "unrecognized-argument", "invalid-argument", "silent-override", "low-accept-length",
    "spec-slower-than-baseline", "oom", "nccl", "cuda-graph", "weight-load", "hidden-state-mismatch",
    "crash", "port-in-use", "capacity", "other",
]
Severity = Literal["error", "warning", "info"]
RecordType = Literal["error", "warning", "milestone", "prefill", "decode"]

# Names any expression or {placeholder} may read. `requested.<dest>` / `effective.<dest>` are SGLang
# dest names (the launch flags as given / as SGLang resolved them), `env.<VAR>` the launch environment,
# `m.<name>` what a log clause captured (its regex's named groups plus the automatic ones below).
CONFIG_NAMES = {
    "steps": "speculative_num_steps in effect (server_args line, else resolution, else the launch)",
    "topk": "speculative_eagle_topk in effect",
    "draft_tokens": "speculative_num_draft_tokens in effect",
    "algorithm": "speculative_algorithm in effect (upper-case), none without speculation",
    "ceiling": "the most accept len can reach: steps + 1",
    "max_running_requests": "max_running_requests in effect",
    "version": "the SGLang version given (--sglang-version), if any",
    "argparse_error": "pre-flight: the text after 'error: ' argparse would print for the launch",
    "resolve_error_type": "pre-flight: the exception SGLang would raise while resolving the flags",
    "resolve_error": "pre-flight: that exception's message",
    "resolve_warnings": "pre-flight: the warnings SGLang would log, joined by newlines",
    "draft_arch": "the draft architecture from 'Load weight end. type=...' (second load)",
    "target_arch": "the target architecture from the first 'Load weight end. type=...'",
    "launch_known": "true when the launch command (or a resolution of it) was given",
    "baseline_tps": "decode tok/s without speculation (given, or measured in an earlier launch of this log)",
    "process_gone": "true once the server's process is gone (seen by the cockpit's or watch's probe; never from a log alone)",
}
METRIC_NAMES = {
    "samples": "decode samples in the clause's window (after the warm-up)",
    "accept_len": "mean accept len over the window", "accept_len_last": "last accept len",
    "accept_len_min": "lowest accept len", "accept_len_max": "highest accept len",
    "accept_len_p10": "10th percentile", "accept_len_p90": "90th percentile",
    "accept_rate": "mean of the printed accept rate (its formula changed across versions)",
    "gen_tokens_per_s": "mean gen throughput, summed across the DP ranks seen",
    "running_req": "mean #running-req", "running_req_min": "lowest #running-req",
    "running_req_max": "highest #running-req", "queue_req": "mean #queue-req",
    "queue_req_min": "lowest #queue-req", "graph_off_fraction": "share of samples with graph: False",
    "speedup_observed": "gen_tokens_per_s / baseline_tps",
    "alpha": "per-token acceptance estimated from accept_len at depth steps (docs/SPECDEC.md §1.7)",
    "saturation": "(accept_len - 1) / steps: 1.0 = every drafted token accepted",
    "implied_cost": "draft cost per drafted token implied by speedup_observed (Leviathan model)",
    "best_steps": "the depth that pays most at alpha and that cost", "best_speedup": "its modelled speedup",
    "draft_acceptance_rate": "(accept_len - 1) / (draft_tokens - 1), recomputed",
    "accept_len_ceiling": "the most accept len can reach at this depth: 1 + min(steps, draft_tokens - 1)",
    "accept_len_of_ceiling": "accept_len / accept_len_ceiling",
    "accept_len_expected": "typical accept len for the algorithm at this depth (a trained draft, chat traffic)",
    "advice_steps": "the depth the advisor recommends (0 = speculation off)",
    "advice_basis": "what its speedup is against: the no-spec baseline, or modelled",
    "advice_direction": "the advisor's verdict: deeper, shallower, keep or off",
}
CAPTURE_NAMES = {
    "line": "line number of the matching record", "text": "its first line",
    "exc_type": "exception type", "message": "exception message", "headline": "the line that opened it",
    "frame": "function of the innermost frame (the one that raised)", "frame_file": "its file",
    "frame_line": "its line number", "frames": "every frame function, innermost last",
    "milestone": "milestone kind",
    "subsystem": "error records: the subsystem (rules/_frames.toml id) the innermost mapped frame belongs to",
    "subsystem_name": "its readable name ('CUDA-graph capture or replay', ...)",
    "through": "every subsystem some frame maps to, innermost first, joined by ', '",
    "sglang_frame": "the innermost SGLang frame: 'func (sglang/srt/...py:line)'",
    "sglang_func": "its function", "sglang_file": "its path from sglang/", "sglang_line": "its line number",
    "message_id": "catalogue clauses: the id of SGLang's message that matched",
    "message_releases": "the releases that print it ('0.4.6..0.5.23')",
    "message_source": "where SGLang prints it: 'sglang/srt/...py:function'",
    "stage": "start-up stage when the record came: the last milestone kind (graph_capture_begin, ...) or serving",
    "when": "the same as a phrase: 'while serving', 'during start-up (after graph_capture_begin)', '(stage not in the log)'",
    "finding": "draft clauses: the inspector finding's title", "finding_fix": "its fix (text)",
    "finding_code": "its code", "finding_evidence": "its evidence, joined by '; '",
}
_DEST = re.compile(r"[a-z_][a-z0-9_]*\Z")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def in_vocabulary(name: str, captures: frozenset[str]) -> bool:
    """True when `name` may appear in a rule expression or placeholder."""
    if name in CONFIG_NAMES or name in METRIC_NAMES:
        return True
    prefix, dot, rest = name.partition(".")
    if not dot:
        return False
    if prefix in ("requested", "effective"):
        return bool(_DEST.match(rest))
    if prefix == "env":
        return bool(_ENV.match(rest))
    if prefix == "m":
        return rest in CAPTURE_NAMES or rest in captures
    return False


