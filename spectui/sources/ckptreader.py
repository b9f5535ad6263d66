"""Draft-checkpoint inspection on a host: the core Reader over SSH, and the launch/environment of a server.

`SSHReader` implements spectui.core.draft's Reader protocol on an SSHHost. Reads go through the host's
file primitives (ssh.files: SFTP when the server offers it, exec'd `tail -c +N | head -c LEN` when it
refuses SFTP); metadata (is it a regular file, a directory) over SFTP's stat, or one exec'd `sh` whose
path is "$1" (never spliced into the script). `bytes_read` counts the bytes returned, which is how the
inspector proves it read headers, not tensors.

`launch_inputs` turns a launch (argv or a LaunchCommand) into what `core.draft.inspect` needs: the target
and draft paths, the algorithm and steps/topk/draft tokens as SGLang resolves them (the rule engine's own
config lookup, so the inspector and the rules agree). `inspect_server` does it for a discovered process:
its argv, its HF cache from /proc/PID/environ, its release from /server_info (else the newest bundled).
"""

from __future__ import annotations

import posixpath
import stat as statmod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spectui.core.draft import LocalReader, Reader, ReadError
from spectui.errors import SpectuiError

# $1 path. Out: "f SIZE" for a regular file, "d" for a directory (symlinks followed); exit 66: neither.
_KIND_SH = ('if [ -f "$1" ]; then printf "f "; stat -L -c %s -- "$1"; elif [ -d "$1" ]; then echo d; '
            'else exit 66; fi')


class SSHReader:
    """spectui.core.draft.Reader on an SSH host (connected): SFTP, or exec where SFTP is refused."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.bytes_read = 0
        self.calls = 0  # round trips made (reads + metadata), for tests and the human report

    async def _sftp(self) -> Any:
        files = getattr(self.host, "files", None)
        return await files.sftp() if files is not None else None

    async def read(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ReadError(f"bad range {offset}+{length} for {path}")
        self.calls += 1
        try:
            data = await self.host.read_range(path, offset, length)
        except FileNotFoundError:
            raise
        except (PermissionError, OSError, SpectuiError) as exc:
            raise ReadError(f"cannot read {path} on {self.host.name}: {exc or exc.__class__.__name__}") from exc
        data = bytes(data[:length])
        self.bytes_read += len(data)
        return data

    async def _kind(self, path: str) -> tuple[str, int] | None:
        """("f", size) / ("d", 0) / None (absent, or neither a file nor a folder)."""
        self.calls += 1
        try:
            sftp = await self._sftp()
            if sftp is not None:
                import asyncssh

                try:
                    attrs = await sftp.stat(path)  # follows symlinks
                except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied):
                    return None
                mode = attrs.permissions or 0
                if statmod.S_ISREG(mode):
                    return "f", int(attrs.size or 0)
                return ("d", 0) if statmod.S_ISDIR(mode) else None
            res = await self.host.run(["sh", "-c", _KIND_SH, "sh", path])
        except SpectuiError as exc:
            raise ReadError(f"cannot stat {path} on {self.host.name}: {exc}") from exc
        except Exception as exc:  # asyncssh.Error and friends: a dropped link mid-inspection
            raise ReadError(f"cannot stat {path} on {self.host.name}: {exc}") from exc
        if res.exit_status != 0:
            return None
        words = res.stdout.split()
        if words[:1] == ["f"] and len(words) == 2 and words[1].isdigit():
            return "f", int(words[1])
        return ("d", 0) if words == ["d"] else None

    async def size(self, path: str) -> int | None:
        kind = await self._kind(path)
        return kind[1] if kind is not None and kind[0] == "f" else None

    async def listdir(self, path: str) -> list[str] | None:
        kind = await self._kind(path)
        if kind is None or kind[0] != "d":
            return None
        self.calls += 1
        try:
            return sorted(await self.host.listdir(path))
        except (FileNotFoundError, PermissionError):
            return None
        except (OSError, SpectuiError) as exc:
            raise ReadError(f"cannot list {path} on {self.host.name}: {exc}") from exc


def reader_for(host: Any) -> Reader:
    """The Reader for a Host: this machine's files directly, an SSH host's through SSHReader."""
    return LocalReader() if getattr(host, "name", "local") == "local" else SSHReader(host)


@dataclass(frozen=True)
class LaunchInputs:
    """What the inspector takes from a launch (SGLang dest names' values, as resolved)."""

    model: str | None
    draft: str | None
    algorithm: str | None
    steps: int | None
    topk: int | None
    draft_tokens: int | None
    version: str | None

    def kwargs(self) -> dict[str, Any]:
        return {"model": self.model, "draft": self.draft, "algorithm": self.algorithm, "steps": self.steps,
                "topk": self.topk, "draft_tokens": self.draft_tokens, "sglang_version": self.version}


def launch_inputs(launch: Any, version: str | None = None, host_catalogue: Any = None) -> LaunchInputs:
    """From a launch command (text, argv or LaunchCommand; raises CommandParseError on bad text).
    `host_catalogue`: the host's own SGLang flags (sources.hostflags_run) for a release not shipped."""
    from spectui.core.launch import parse_command
    from spectui.core.rules import ConfigContext

    cmd = parse_command(launch) if isinstance(launch, str | list | tuple) else launch
    ctx = ConfigContext(launch=cmd, version=version, host_catalogue=host_catalogue)

    def text(dest: str) -> str | None:
        v = ctx.in_effect(dest)
        return str(v) if v not in (None, "", False) else None

    return LaunchInputs(text("model_path"), text("speculative_draft_model_path"), ctx.value("algorithm"),
                        ctx.value("steps"), ctx.value("topk"), ctx.value("draft_tokens"), version)


def hf_cache_of(env: Mapping[str, str]) -> str | None:
    """The HF cache a process uses: HF_HUB_CACHE / HUGGINGFACE_HUB_CACHE, else HF_HOME, else ~/.cache."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        if env.get(name):
            return env[name]
    if env.get("XDG_CACHE_HOME"):
        return posixpath.join(env["XDG_CACHE_HOME"], "huggingface")
    return posixpath.join(env["HOME"], ".cache", "huggingface") if env.get("HOME") else None


def _absolute(path: str | None, cwd: str) -> str | None:
    """A relative checkpoint path of a server is relative to its working directory (not a hub id)."""
    if not path or path.startswith("/") or not cwd:
        return path
    if path.startswith(("./", "../")) or path in (".", ".."):
        return posixpath.normpath(posixpath.join(cwd, path))
    return path  # `org/name` may be a hub id: the core tries it as a path first, then in the HF cache


@dataclass
class ServerInspection:
    """The inspection of one server's draft, with where its inputs came from."""

    inspection: Any  # core.draft.Inspection
    pid: int | None
    host: str
    version: str | None
    version_from: str  # "server_info", "given", "log", "newest bundled"
    hf_cache: str | None
    reader: Any
    catalogue: Any = None  # core.launch.CataloguePick: which flags judged the server's command, and why


async def inspect_server(host: Any, proc: Any, *, version: str | None = None,
                         max_prompt_len: int | None = None, host_flags: bool = True) -> ServerInspection:
    """Inspect the draft of the discovered server `proc` (sources.base.ServerProcess) on `host`.
    `host_flags`: for a release spectui does not ship, judge its command with the host's own SGLang flags."""
    from spectui.core.draft import inspect

    version_from = "given" if version else "newest bundled"
    if version is None and proc.port is not None:
        from spectui.sources.discover import server_api_key
        from spectui.sources.http import server_version

        version = await server_version(host, proc.port, proc.host_addr, server_api_key(proc.argv))
        version_from = "server_info" if version else version_from
    pick = host_cat = None
    if host_flags:
        from spectui.sources.hostflags_run import server_catalogue

        cat, pick = await server_catalogue(host, proc, version)
        host_cat = cat if pick.source == "host" else None
    inputs = launch_inputs(list(proc.argv), version, host_cat)
    hf = hf_cache_of(proc.env)
    reader = reader_for(host)
    kw = inputs.kwargs()
    kw["model"], kw["draft"] = _absolute(inputs.model, proc.cwd), _absolute(inputs.draft, proc.cwd)
    result = await inspect(reader, hf_cache=hf, max_prompt_len=max_prompt_len, **kw)
    return ServerInspection(result, proc.pid, host.name, version, version_from, hf, reader, pick)


async def inspect_launch(host: Any, launch: Any, *, version: str | None = None, env: Mapping[str, str] | None = None,
                         draft: str | None = None, model: str | None = None) -> ServerInspection:
    """Inspect what a launch command names (and/or explicit paths) on `host` (local: this machine)."""
    from spectui.core.draft import inspect

    if isinstance(launch, str | list | tuple):
        from spectui.core.launch import parse_command

        launch = parse_command(launch)
    inputs = (launch_inputs(launch, version) if launch is not None
              else LaunchInputs(None, None, None, None, None, None, version))
    kw = inputs.kwargs()
    kw["draft"] = draft or inputs.draft
    kw["model"] = model or inputs.model
    hf = hf_cache_of(dict(env or {}) | dict(getattr(launch, "env", ()) or ()))
    reader = reader_for(host)
    result = await inspect(reader, hf_cache=hf, **kw)
    return ServerInspection(result, None, getattr(host, "name", "local"), version,
                            "given" if version else "newest bundled", hf, reader)


# -- a plain-text summary (the CLI's report and the cockpit's draft screen) ---------------------------


def _n(v: Any) -> str:
    return "-" if v is None else str(v)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def summary_lines(done: Any) -> list[tuple[str, str]]:
    """(label, text) rows: draft, target, launch, read. Shared with the cockpit's draft screen."""
    res = done.inspection
    d, t, launch = res.draft, res.target, res.launch or {}
    rows: list[tuple[str, str]] = []
    if d:
        if d.get("error"):
            rows.append(("draft", f"{d.get('path')}  (not read: {d['error']})"))
        else:
            vocab = _n(d.get("vocab_size")) + (f" -> {d['draft_vocab_size']}" if d.get("draft_vocab_size") else "")
            rows.append(("draft", f"{d.get('path')}  {d.get('format')}  {', '.join(d.get('architectures') or []) or '?'}"
                                  f"  hidden {_n(d.get('hidden_size'))}, {_n(d.get('num_layers'))} layer(s), vocab {vocab}"
                                  f", ctx {_n(d.get('max_position_embeddings'))}, aux {_n(d.get('aux_layer_ids'))}"))
    else:
        rows.append(("draft", "(none given)"))
    if t:
        if t.get("error"):
            rows.append(("target", f"{t.get('path')}  (not read)"))
        else:
            rows.append(("target", f"{t.get('path')}  {', '.join(t.get('architectures') or []) or '?'}  hidden "
                                   f"{_n(t.get('hidden_size'))}, {_n(t.get('num_layers'))} layers, vocab "
                                   f"{_n(t.get('vocab_size'))}, ctx {_n(t.get('max_position_embeddings'))}"))
    alg = launch.get("algorithm")
    rows.append(("launch", (f"{alg}  steps {_n(launch.get('steps'))}, topk {_n(launch.get('topk'))}, draft tokens "
                            f"{_n(launch.get('draft_tokens'))}" if alg else "algorithm unknown")
                 + f"  ·  SGLang {done.version or 'release unknown'}"
                 + (f" ({done.version_from})" if done.version else "")))
    where = f"{done.host}" + (f" pid {done.pid}" if done.pid else "")
    rows.append(("read", f"{_size(done.reader.bytes_read)} on {where} (headers only)"))
    return rows
