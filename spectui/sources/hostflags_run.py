"""Read a host's own SGLang flags by running data/dump_flags.py there (core/launch/hostflags decides and
caches; this module only runs the script over the host's `run`, local or SSH).

The interpreter is the server's own: its argv[0] when that is a python (a venv's bin/python keeps its
venv; a bare name is looked up through the server's PATH), the shebang of an `sglang` console script,
else `/proc/PID/exe` (readlink on the host), else `python3` on PATH. The server's PATH, PYTHONPATH,
PYTHONHOME, VIRTUAL_ENV, CONDA_PREFIX and LD_LIBRARY_PATH go along (`env K=V … python -c SCRIPT`: the
script travels as one argument, shlex-quoted by the SSH host), CUDA_VISIBLE_DEVICES is emptied: the dump
imports `sglang.srt.server_args` only and needs no GPU. Never raises: a failed dump is the nearest bundled
catalogue with the reason in CataloguePick.why.

Dumps are cached per host and version (core/launch/hostflags). When the server's version is unknown (no
/server_info answer), the installation is identified instead, on the host and without importing SGLang:
the interpreter's real path, the `sglang` package's real path, and the mtime/size/inode of its
`__init__.py`, `version.py`, `srt/server_args.py` and of the `sglang/` and `srt/` folders, plus the
installed distribution's version. An upgrade in place (pip rewrites those files and folders) or an
edited checkout is a new installation, dumped again; the same one finds the version its last dump said
(`install-<key>.json` beside the dumps) and that version's cached dump.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
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
    parse_dump,
    pick_catalogue,
)
from spectui.core.launch import hostflags as _hostflags

ENV_KEPT = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH")
DUMP_TIMEOUT = 120.0  # real SGLang imports torch on the way to server_args: seconds, not milliseconds
FALLBACK_PYTHON = "python3"


# Which SGLang `python` would import, found without importing it (find_spec of a top-level name runs no
# package code): one line, INSTALL_MARKER + JSON; no "sglang" key when there is none.
INSTALL_SCRIPT = r"""
import importlib.util, json, os, sys
out = {"python": os.path.realpath(sys.executable)}
try:
    spec = importlib.util.find_spec("sglang")
except Exception:
    spec = None
paths = list(getattr(spec, "submodule_search_locations", None) or [])
if paths:
    root = os.path.realpath(paths[0])
    out["sglang"] = root
    for rel in (".", "__init__.py", "version.py", "srt", "srt/server_args.py"):
        try:
            st = os.stat(os.path.join(root, rel))
            out[rel] = [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            pass
    try:
        from importlib import metadata
        out["dist"] = metadata.version("sglang")
    except Exception:
        pass
print("SPECTUI-SGLANG-INSTALL " + json.dumps(out, sort_keys=True))
"""
INSTALL_MARKER = "SPECTUI-SGLANG-INSTALL "
_SAFE = re.compile(r"[^A-Za-z0-9._@+-]+")  # as core/launch/hostflags names a host's cache folder


def _python_argv(python: str, env: Mapping[str, str] | None, script: str) -> list[str]:
    kept = [f"{k}={env[k]}" for k in ENV_KEPT if env and k in env]
    return ["env", *kept, "CUDA_VISIBLE_DEVICES=", python, "-c", script]


def dump_argv(python: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The host command: `env [K=V …] CUDA_VISIBLE_DEVICES= PYTHON -c <dump_flags.py text>`."""
    return _python_argv(python, env, dump_script())


async def install_key(host: Any, python: str, env: Mapping[str, str] | None = None) -> str | None:
    """A key for the SGLang installation `python` imports on `host` (INSTALL_SCRIPT), or None when there
    is none or the host could not say (then nothing is cached by it)."""
    try:
        res = await host.run(_python_argv(python, env, INSTALL_SCRIPT), timeout=30)
    except Exception:  # noqa: BLE001 - no key: the dump runs (and fails with its own reason)
        return None
    for line in reversed((res.stdout or "").splitlines() if res.exit_status == 0 else []):
        if line.startswith(INSTALL_MARKER):
            try:
                found = json.loads(line[len(INSTALL_MARKER):])
            except ValueError:
                return None
            if not isinstance(found, dict) or not found.get("sglang"):
                return None
            return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()[:20]
    return None


def _install_file(host_name: str, key: str, cache: Path | None) -> Path:
    root = cache if cache is not None else _hostflags.cache_dir()
    return root / (_SAFE.sub("_", host_name) or "host") / f"install-{key}.json"


def _remembered_version(host_name: str, key: str, cache: Path | None) -> str | None:
    try:
        version = json.loads(_install_file(host_name, key, cache).read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and version else None


def _remember_version(host_name: str, key: str, stdout: str, cache: Path | None) -> None:
    try:
        version = parse_dump(stdout).get("sglang_version")
    except Exception:  # noqa: BLE001 - not a dump: nothing to remember
        return
    if not isinstance(version, str) or not version:
        return  # the dump could not say either: its cache entry ("unknown") is no one installation's
    path = _install_file(host_name, key, cache)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": version}), encoding="utf-8")
    except OSError:
        pass  # no cache is only slower


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
    key = None
    if version is None:  # the server did not say: the installation it imports says which dump is its own
        key = await install_key(host, python, env)
        known = _remembered_version(name, key, cache) if key else None
        if known is not None and cached_catalogue(name, known, cache) is not None:
            version = known  # as if /server_info had answered: that version's cached dump, nothing runs
            if not needs_host(version):
                return catalogue_for_host(version, None, host=name, cache=cache)
    stdout, failure = "", None
    if cached_catalogue(name, version, cache) is None:
        try:
            res = await host.run(dump_argv(python, env), timeout=DUMP_TIMEOUT)
            if res.exit_status == 0:
                stdout = res.stdout
                if key is not None:
                    _remember_version(name, key, stdout, cache)
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
