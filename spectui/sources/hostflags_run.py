"""Read a host's own SGLang flags by running data/dump_flags.py there (core/launch/hostflags decides and
caches; this module only runs the script over the host's `run`, local or SSH).

The interpreter is the server's own: its argv[0] when that is a python (a venv's bin/python keeps its
venv; a bare name is looked up through the server's PATH), the shebang of an `sglang` console script,
else `/proc/PID/exe` (readlink on the host), else `python3` on PATH. The server's PATH, PYTHONPATH,
PYTHONHOME, VIRTUAL_ENV, CONDA_PREFIX and LD_LIBRARY_PATH go along (`env K=V … python -c SCRIPT`: the
script travels as one argument, shlex-quoted by the SSH host), CUDA_VISIBLE_DEVICES is emptied: the dump
imports `sglang.srt.server_args` only and needs no GPU. Never raises: a failed dump is the nearest bundled
catalogue with the reason in CataloguePick.why.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spectui.core.launch import (
    CataloguePick,
    FlagCatalogue,
    cached_catalogue,
    catalogue_for_host,
    dump_script,
    load_catalogue,
    needs_host,
    pick_catalogue,
)

ENV_KEPT = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH")
DUMP_TIMEOUT = 120.0  # real SGLang imports torch on the way to server_args: seconds, not milliseconds
FALLBACK_PYTHON = "python3"


def dump_argv(python: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The host command: `env [K=V …] CUDA_VISIBLE_DEVICES= PYTHON -c <dump_flags.py text>`."""
    kept = [f"{k}={env[k]}" for k in ENV_KEPT if env and k in env]
    return ["env", *kept, "CUDA_VISIBLE_DEVICES=", python, "-c", dump_script()]


def _shebang_python(first: bytes) -> str | None:
    line = first.split(b"\n", 1)[0].decode("utf-8", "replace")
    if not line.startswith("#!"):
        return None
    words = line[2:].split()
    if words and posixpath.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if words and posixpath.basename(words[0]).startswith("python"):
        return words[0]
    return None


async def server_python(host: Any, server: Any) -> str:
    """The interpreter the server runs (see the module docstring); `python3` when nothing says."""
    argv = list(getattr(server, "argv", ()) or ())
    exe = argv[0] if argv else ""
    base = posixpath.basename(exe)
    if base.startswith("python") and "\0" not in exe:
        if "/" not in exe or exe.startswith("/"):
            return exe
        return posixpath.normpath(posixpath.join(getattr(server, "cwd", "") or "/", exe))
    if exe.startswith("/") and base == "sglang":
        try:
            found = _shebang_python(bytes(await host.read_range(exe, 0, 512)))
        except Exception:  # noqa: BLE001 - an unreadable script: /proc/PID/exe next
            found = None
        if found:
            return found
    pid = getattr(server, "pid", None)
    if pid is not None:
        try:
            res = await host.run(["readlink", f"/proc/{int(pid)}/exe"], timeout=10)
            target = res.stdout.strip()
            if res.exit_status == 0 and target.startswith("/") and " (deleted)" not in target:
                return target
        except Exception:  # noqa: BLE001 - no /proc (or no permission): python3 on PATH
            pass
    return FALLBACK_PYTHON


def _failure(res: Any, python: str) -> str:
    err = [ln for ln in (res.stderr or "").splitlines() if ln.strip()]
    tail = err[-1].strip()[:200] if err else "no output"
    return f"{python} exited {res.exit_status}: {tail}"


async def host_catalogue(host: Any, version: str | None, *, python: str = FALLBACK_PYTHON,
                         env: Mapping[str, str] | None = None, cache: Path | None = None
                         ) -> tuple[FlagCatalogue, CataloguePick]:
    """(catalogue, which one and why) for SGLang `version` on `host`: the exact bundled one when spectui
    ships it (nothing runs), else the host's own flags (cached per host and version), else the nearest
    bundled one with the reason. Never raises."""
    name = str(getattr(host, "name", "host"))
    if not needs_host(version):
        return catalogue_for_host(version, None, host=name, cache=cache)
    stdout, failure = "", None
    if cached_catalogue(name, version, cache) is None:
        try:
            res = await host.run(dump_argv(python, env), timeout=DUMP_TIMEOUT)
            if res.exit_status == 0:
                stdout = res.stdout
            else:
                failure = _failure(res, python)
        except Exception as exc:  # noqa: BLE001 - a dead connection is one more reason to fall back
            failure = str(exc) or type(exc).__name__

    def run(_argv: Any) -> str:
        if failure is not None:
            raise RuntimeError(failure)
        return stdout

    try:
        return catalogue_for_host(version, run, python, host=name, cache=cache)
    except ValueError as exc:  # not a release number and the host could not say either
        newest = pick_catalogue(None).version
        return load_catalogue(newest), CataloguePick(newest, False, f"{exc}; using the newest bundled, {newest}")


async def server_catalogue(host: Any, server: Any, version: str | None, *, cache: Path | None = None
                           ) -> tuple[FlagCatalogue, CataloguePick]:
    """host_catalogue with the server's own interpreter and environment."""
    if not needs_host(version):
        return await host_catalogue(host, version, cache=cache)
    python = await server_python(host, server)
    return await host_catalogue(host, version, python=python, env=dict(getattr(server, "env", {}) or {}),
                                cache=cache)
