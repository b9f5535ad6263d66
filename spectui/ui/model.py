"""View values the dashboard shows: frozen snapshots the app builds from pipeline updates, widgets only render.

Nothing here does I/O or reads a clock; the app passes times in. Field names follow core's
(`accept_len`, `gen_tokens_per_s`, `requested`, `effective`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Settings the config panel always shows (SGLang `dest` names), in this order.
SPEC_KEYS: tuple[str, ...] = (
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)
# Shown when requested, or when the effective value is known and differs from a request.
OTHER_KEYS: tuple[str, ...] = (
    "max_running_requests",
    "cuda_graph_max_bs",
    "disable_cuda_graph",
    "disable_overlap_schedule",
    "mem_fraction_static",
    "tp_size",
    "dp_size",
    "page_size",
)
SHORT_NAMES: dict[str, str] = {
    "speculative_algorithm": "algorithm",
    "speculative_draft_model_path": "draft model",
    "speculative_num_steps": "num steps",
    "speculative_eagle_topk": "eagle topk",
    "speculative_num_draft_tokens": "draft tokens",
    "max_running_requests": "max running",
    "cuda_graph_max_bs": "graph max bs",
    "disable_cuda_graph": "no cuda graph",
    "disable_overlap_schedule": "no overlap",
    "mem_fraction_static": "mem fraction",
}


@dataclass(frozen=True, slots=True)
class HeaderInfo:
    """What the header line says. `last_line_age` is seconds since the last log line arrived."""

    host: str = "?"
    pid: int | None = None
    version: str | None = None
    phase: str = "unknown"
    connection: str = "connecting"
    last_line_age: float | None = None
    launched: str | None = None
    log_path: str | None = None
    read_only: bool = False
    paused: bool = False
    health: str | None = None  # healthy / unhealthy / gone (sources.liveness); None = not judged (a file, a replay)
    health_reason: str = ""


@dataclass(frozen=True, slots=True)
class ConfigRow:
    key: str
    requested: object | None
    effective: object | None
    differs: bool


@dataclass(frozen=True, slots=True)
class ConfigView:
    """Requested (launch command) vs effective (server_args in the log, else the resolver's prediction)."""

    rows: tuple[ConfigRow, ...] = ()
    effective_source: str = ""  # "log" (server_args line) / "predicted" (resolver) / ""
    requested_known: bool = False
    warnings: tuple[str, ...] = ()
    problem: str = ""  # the resolver could not judge the launch (argparse rejects it): why, for the caption
    device: str | None = None  # --device as the server runs it (cpu: no CUDA graphs to miss)

    def value(self, key: str) -> object | None:
        for row in self.rows:
            if row.key == key:
                return row.effective if row.effective is not None else row.requested
        return None


def _norm(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def build_config_view(
    requested: Mapping[str, Any] | None,
    log_effective: Mapping[str, Any] | None,
    predicted: Mapping[str, Any] | None,
    warnings: tuple[str, ...] = (),
    problem: str = "",
) -> ConfigView:
    """Rows for the config panel; `differs` when a requested value is not what the server uses."""
    effective = log_effective or predicted or {}
    source = "log" if log_effective else ("predicted" if predicted else "")
    req = dict(requested or {})
    keys = list(SPEC_KEYS) + [k for k in OTHER_KEYS if k in req or (k in effective and k in req)]
    keys += [k for k in req if k not in keys and k.startswith("speculative_")]
    rows = []
    for key in keys:
        r, e = req.get(key), effective.get(key)
        differs = key in req and key in effective and _norm(r) != _norm(e)
        rows.append(ConfigRow(key, r, e, differs))
    device = effective.get("device") or req.get("device")
    return ConfigView(tuple(rows), source, requested is not None, tuple(warnings), problem,
                      str(device) if device else None)


@dataclass(frozen=True, slots=True)
class SeriesHistory:
    """Accept len and tok/s points per launch (oldest first) so plots can mark relaunch boundaries."""

    accept_len: tuple[tuple[float | None, ...], ...] = ()
    gen_tokens_per_s: tuple[tuple[float | None, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class GpuInfo:
    index: int
    util: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None


@dataclass(frozen=True, slots=True)
class LaunchSummary:
    """One launch seen in this session, for the history screen."""

    label: str
    first_line: int | None
    samples: int
    accept_len_mean: float | None
    accept_len_p10: float | None
    accept_len_p90: float | None
    gen_tokens_per_s_mean: float | None
    settings: Mapping[str, object] = field(default_factory=dict)
