"""Errors of the load generator. Each message is one line for the operator: what happened, what to do.

BenchError (ProbeError, exit 1)   the run could not be made
├── ServerUnreachableError        nothing answers at the address (refused, DNS, timeout, not HTTP)
├── NotOpenAIServerError          something answers, but not an OpenAI-compatible API (/v1/models)
├── ServerAuthError               401/403: an API key is needed or was rejected
├── ServerNotReadyError           503 from /v1/models: still starting or shutting down
├── WarmupFailedError             every warm-up request failed (lists the error kinds)
└── BenchInterrupted              stopped (Ctrl-C) before anything was measured (exit 130)
BenchConfigError (UsageError, exit 2)  contradictory or out-of-range options
PromptFileError (InputError, exit 2)   lives in spectui.load.prompts: names the file and the line
"""

from __future__ import annotations

from spectui.errors import ProbeError, UsageError


class BenchError(ProbeError):
    pass


class ServerUnreachableError(BenchError):
    pass


class NotOpenAIServerError(BenchError):
    pass


class ServerAuthError(BenchError):
    pass


class ServerNotReadyError(BenchError):
    pass


class WarmupFailedError(BenchError):
    pass


class BenchConfigError(UsageError):
    pass


class BenchInterrupted(BenchError):
    exit_code = 130
