"""Messages that cross screens (facts, named as such). Widget-local messages live on their widgets.

Typed dataclasses (Textual runs Message's own set-up from `__post_init__`), like toolong's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from spectui.core.launch import LaunchCommand


class StartedServer(Protocol):
    """One start of a command (ops.relaunch.outcome.Attempt)."""

    @property
    def pid(self) -> int | None: ...

    @property
    def log(self) -> str | None: ...


class RelaunchOutcome(Protocol):
    """What a relaunch ended with (ops.relaunch.outcome.RelaunchResult, ops.group.result.GroupResult's members, the
    sweep's restore): the new server, and the previous one when it was rolled back (`rollback`, optional)."""

    @property
    def new(self) -> StartedServer: ...


@dataclass(frozen=True)
class Restarted:
    """A server started again outside a relaunch's result (the sweep's restore): the same shape."""

    new: StartedServer


@dataclass
class RelaunchFinished(Message):
    """A relaunch finished: follow `log_path` if the new server is up (`healthy`), `launch` its command."""

    result: RelaunchOutcome
    log_path: str | None
    launch: LaunchCommand | None
    healthy: bool


@dataclass
class FixChosen(Message):
    """The user asked to apply a diagnosis' fix: open the relaunch screen pre-filled with it."""

    diagnosis: Any  # core.rules Diagnosis
