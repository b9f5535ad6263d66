"""Messages that cross screens (facts, named as such). Widget-local messages live on their widgets."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class RelaunchFinished(Message):
    """ops.relaunch finished: follow `log_path` if the new server is up; `result` is ops' result object."""

    def __init__(self, result: Any, *, log_path: str | None, launch: Any, healthy: bool) -> None:
        super().__init__()
        self.result = result
        self.log_path = log_path
        self.launch = launch
        self.healthy = healthy


class FixChosen(Message):
    """The user asked to apply a diagnosis' fix: open the relaunch screen pre-filled with it."""

    def __init__(self, diagnosis: Any) -> None:
        super().__init__()
        self.diagnosis = diagnosis
