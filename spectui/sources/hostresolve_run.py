"""Run data/resolve_host.py on a host: what the server's own SGLang makes of a command line (its argparse
and ServerArgs resolution), for a source build that no bundled release describes (core/launch/hostresolve
decides and reads the answer; this module only runs the script over the host's `run`, local or SSH).

The interpreter and working directory are the server's (a relative --model-path resolves as it did at
start), CUDA_VISIBLE_DEVICES is emptied (resolution loads no weights and needs no GPU; where a check does,
the host cannot say and the caller keeps the replayed rules). Only the variables resolution reads travel
(SGLANG_*/SGL_*, the interpreter's own, the HF stack's offline switches), never one whose name says it is a
secret: the command line of the run is visible to the host's other users.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from spectui.core.launch import HostResolveError
from spectui.core.launch import host_resolution_script as script
from spectui.core.launch import parse_host_resolution as parse
from spectui.core.secrets import redact_env
from spectui.sources.hostflags_run import ENV_KEPT, server_python

RESOLVE_TIMEOUT = 180.0  # imports torch and SGLang, reads the model's config
_EXTRA = ("LD_PRELOAD", "TVM_FFI_CACHE_DIR", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_HUB_CACHE")
_PREFIXES = ("SGLANG_", "SGL_")


def resolve_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The server's variables that SGLang's resolution reads, secrets left out."""
    env = env or {}
    kept = {k: v for k, v in env.items() if k in ENV_KEPT or k in _EXTRA or k.startswith(_PREFIXES)}
    masked = redact_env(kept)
    return {k: v for k, v in kept.items() if masked.get(k) == v}


def resolve_argv(python: str, cwd: str | None, env: Mapping[str, str] | None, args: Sequence[str]) -> list[str]:
    """`sh -c 'cd CWD && exec "$@"' sh env K=V … CUDA_VISIBLE_DEVICES= PYTHON -c SCRIPT ARGV-JSON`."""
    kept = [f"{k}={v}" for k, v in sorted(resolve_env(env).items())]
    run = ["env", *kept, "CUDA_VISIBLE_DEVICES=", python, "-c", script(), json.dumps(list(args))]
    return ["sh", "-c", 'cd "$1" 2>/dev/null; shift; exec "$@"', "sh", cwd or "/", *run]


# Answers already had in this process, by host, interpreter, directory, command and environment: a plan
# resolves the running command once, however many edits are judged against it (a sweep, a screen).
_ANSWERS: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_KEEP = 64


async def host_resolution(host: Any, server: Any, args: Sequence[str]) -> dict[str, Any]:
    """The host's own resolution of `args` (what SGLang's argparse sees) as data/resolve_host.py prints
    it. Raises HostResolveError with the reason when the host could not say."""
    python = await server_python(host, server)
    argv = resolve_argv(python, getattr(server, "cwd", None), getattr(server, "env", None), args)
    key = (str(getattr(host, "name", "")), tuple(argv))
    if key in _ANSWERS:
        _ANSWERS.move_to_end(key)
        return dict(_ANSWERS[key])
    answer = await _run(host, python, argv)
    _ANSWERS[key] = answer
    while len(_ANSWERS) > _KEEP:
        _ANSWERS.popitem(last=False)
    return dict(answer)


async def _run(host: Any, python: str, argv: list[str]) -> dict[str, Any]:
    try:
        res = await host.run(argv, timeout=RESOLVE_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - a dead connection or a timeout: the host could not say
        raise HostResolveError(str(exc) or type(exc).__name__) from None
    try:
        return parse(res.stdout or "")
    except HostResolveError as exc:
        err = [ln for ln in (res.stderr or "").splitlines() if ln.strip()]
        tail = f": {err[-1].strip()[:200]}" if err else ""
        raise HostResolveError(f"{python} exited {res.exit_status}{tail} ({exc})") from None
