"""What a relaunch reports: its steps, options, each start attempt and the result (shared by
ops.relaunch.run, which plans and records, and ops.relaunch.runner, which carries a plan out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from spectui.ops.hostcmds import display_argv
from spectui.ops.relaunch.plan import RelaunchPlan


class Step(StrEnum):
    CHECKING = "checking"
    STOPPING = "stopping"
    KILLING = "killing"
    WAITING_PORT = "waiting_port"
    WAITING_GPU = "waiting_gpu"
    STARTING = "starting"
    LOADING = "loading"
    CAPTURING = "capturing"
    HEALTHY = "healthy"
    OBSERVING = "observing"
    FAILED = "failed"
    ROLLING_BACK = "rolling_back"
    ROLLED_BACK = "rolled_back"
    ROLLBACK_FAILED = "rollback_failed"
    RECONNECTING = "reconnecting"


@dataclass(frozen=True, slots=True)
class Progress:
    step: Step
    message: str
    rollback: bool = False  # the step belongs to restoring the previous command
    pid: int | None = None
    diagnoses: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class RelaunchOptions:
    force: bool = False  # start a command the pre-flight says SGLang rejects; signal a shared group
    rollback: bool = True
    stop_grace_s: float = 30.0  # SIGTERM -> SIGKILL
    kill_wait_s: float = 15.0
    port_timeout_s: float = 60.0
    gpu_timeout_s: float = 120.0
    health_timeout_s: float = 900.0  # big models load and capture graphs for many minutes
    observe_s: float = 0.0  # after healthy, keep reading the log this long for accept len / tok/s
    peer_grace_s: float = 20.0  # a group's node >= 1 whose /health never answers: up this long after its node 0
    as_owner: bool = False  # a server another user owns: stop and start it as that user (sudo -n -u), not refuse


@dataclass(frozen=True, slots=True)
class Attempt:
    """One start of a command (the edited one, or the previous one when rolling back)."""

    pid: int | None
    log: str | None
    healthy: bool
    error: str | None = None
    diagnoses: tuple[Any, ...] = ()
    accept_len: float | None = None
    gen_tokens_per_s: float | None = None
    cause: Any = None  # the diagnosis that ended a failed start (core.rules Diagnosis), when one did

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "log": self.log, "healthy": self.healthy, "error": self.error,
                "diagnoses": [d.to_json() for d in self.diagnoses],
                "accept_len": self.accept_len, "gen_tokens_per_s": self.gen_tokens_per_s}


@dataclass(frozen=True, slots=True)
class RelaunchResult:
    plan: RelaunchPlan
    new: Attempt
    rollback: Attempt | None = None
    message: str = ""
    history_id: str | None = None
    steps: tuple[Progress, ...] = field(default=())

    @property
    def healthy(self) -> bool:
        return self.new.healthy

    @property
    def rolled_back(self) -> bool:
        return self.rollback is not None and self.rollback.healthy

    def to_json(self) -> dict[str, Any]:
        return {
            "old_pid": self.plan.server.pid,
            "new_pid": self.new.pid,
            "log": self.new.log,
            "command": display_argv(self.plan.new.argv),
            "healthy": self.new.healthy,
            "rolled_back": self.rolled_back,
            "error": self.new.error,
            "message": self.message,
            "rollback": self.rollback.to_json() if self.rollback else None,
            "diagnoses": [d.to_json() for d in self.new.diagnoses],
            "accept_len": self.new.accept_len,
            "gen_tokens_per_s": self.new.gen_tokens_per_s,
            "history_id": self.history_id,
            **{k: v for k, v in self.plan.to_json().items() if k not in ("old_pid", "command", "log")},
        }
