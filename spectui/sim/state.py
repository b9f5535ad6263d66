"""What the simulator's endpoints and its /metrics share about the running server."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from spectui.sim.dpgroup import EngineGroup
from spectui.sim.logfmt import LogFormat


@dataclass
class SimState:
    """What the endpoints need to know about the running simulated server."""

    fmt: LogFormat
    engine: EngineGroup
    args: dict[str, object]  # every ServerArgs field, resolved
    launch_argv: list[str]
    write: Callable[[str], None]
    max_total_tokens: int
    context_len: int
    ready: bool = False
    spec_counters: bool = False  # --sim-spec-counters: a patched build's cumulative counters
    started_at: float = field(default_factory=time.time)

    @property
    def model_name(self) -> str:
        return str(self.args.get("served_model_name") or self.args.get("model_path"))
