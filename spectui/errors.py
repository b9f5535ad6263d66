"""spectui's exception tree, documented in one place (httpx/_exceptions.py is the model).

SpectuiError                      base: every error spectui raises on purpose carries a one-line message
├── UsageError                    bad CLI input or input file (exit code 2)
│   ├── InputError                a file/stdin that cannot be read or is not what it should be
│   └── CommandParseError         a launch command that cannot be parsed (unbalanced quotes, empty, ...)
├── RulesError                    a rules file that does not load (names file, rule id and field)
├── HostError                     a host could not be reached or used
│   ├── HostKeyError              unknown or changed host key (message says how to accept it)
│   ├── AuthError                 permission denied
│   ├── ConnectError              host down, DNS, timeout, connection dropped
│   │   └── UnknownHostError      the resolver does not know the host name (exit code 2: a typo)
│   └── RemoteCommandError        a command on the host failed (exit status, stderr tail)
├── DiscoveryError                no SGLang server found / several found / not an SGLang process
├── ProbeError                    an HTTP endpoint of the server failed
└── RelaunchError                 a relaunch step failed (says which step and the host's state)

Every message is written for the operator: what happened and what to do next.
"""

from __future__ import annotations


class SpectuiError(Exception):
    """Base class. `str(exc)` is a one-line message for the operator."""

    exit_code = 1


class UsageError(SpectuiError):
    exit_code = 2


class InputError(UsageError):
    pass


class CommandParseError(UsageError):
    pass


class RulesError(SpectuiError):
    exit_code = 2


class HostError(SpectuiError):
    pass


class HostKeyError(HostError):
    pass


class AuthError(HostError):
    pass


class ConnectError(HostError):
    pass


class UnknownHostError(ConnectError):
    """The host name does not resolve (socket.gaierror): bad input, retried a few times only."""

    exit_code = 2


class RemoteCommandError(HostError):
    def __init__(self, message: str, *, exit_status: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.exit_status = exit_status
        self.stderr = stderr


class DiscoveryError(SpectuiError):
    pass


class ProbeError(SpectuiError):
    pass


class RelaunchError(SpectuiError):
    pass
