"""Size, depth and time limits on everything spectui reads from outside (a server, Prometheus, a bundle,
a checkpoint): the one place they are defined, so a reader and the writer of the same data agree.

`load_json` is json.loads with a depth limit: JSON nested deeper than MAX_JSON_DEPTH (SGLang's
/server_info is about 5 deep, a bundle member or a checkpoint's config.json under 10) raises
`JsonTooDeepError`, a ValueError, so every reader's existing "not valid JSON" path words it as one line,
instead of a RecursionError traceback here or later in a recursive walk (masking, rendering).
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64

# HTTP answers (sources.http, fleet.prom): a body over its cap, or an answer not complete within its
# total deadline, is refused with one line. /server_info of a real server is a few KiB to a few hundred
# KiB (internal_states per DP rank); /metrics a few hundred KiB; a Prometheus answer for a fleet of
# thousands of series a few MiB.
HTTP_JSON_BYTES = 16 << 20
HTTP_METRICS_BYTES = 32 << 20
HTTP_PROMETHEUS_BYTES = 64 << 20
HTTP_TOTAL_SECONDS = 30.0  # whole request, connect to last byte (a per-read timeout alone lets a trickle live)

# Bundles (docs/BUNDLE.md "Limits"): the log budget `record --log-bytes` accepts, and what the format
# lets each member hold. The log member is at most the budget (tail) + 4 x the budget (protected lines)
# + its cut markers; a snapshot member holds one HTTP answer (above); a JSON member one object.
MAX_LOG_BUDGET = 64 << 20
LOG_MARKER_SLACK = 1 << 20
MAX_MANIFEST_BYTES = 16 << 20
MAX_JSON_MEMBER_BYTES = 16 << 20
MAX_JSONL_MEMBER_BYTES = 64 << 20
MAX_BUNDLE_BYTES = 1 << 30  # total decompressed, whatever the manifest says


class JsonTooDeepError(ValueError):
    pass


def _deeper_than(obj: Any, limit: int) -> bool:
    # Level by level, exact types (json.loads makes only dict and list): a Prometheus answer for 10,000
    # instances holds ~200,000 containers, and a walk with a tuple and an isinstance a node took seconds.
    level, depth = [obj], 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        keep = below.append
        for node in level:
            for c in node.values() if type(node) is dict else node:
                t = type(c)
                if t is dict or t is list:
                    keep(c)
        level, depth = below, depth + 1
    return False


def load_json(data: str | bytes | bytearray, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads, refusing JSON nested deeper than `max_depth` (JsonTooDeepError, a ValueError)."""
    try:
        obj = json.loads(data)
    except RecursionError:
        raise JsonTooDeepError(f"JSON nested deeper than {max_depth} levels") from None
    if isinstance(obj, dict | list) and _deeper_than(obj, max_depth):
        raise JsonTooDeepError(f"JSON nested deeper than {max_depth} levels")
    return obj
