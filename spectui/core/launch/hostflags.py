"""The flags of the host's own SGLang, for a release spectui does not ship (newer, a dev build).

`read_host_catalogue(run, ...)` runs spectui/data/dump_flags.py with the host's Python through `run(argv) ->
stdout` — any callable, so sources/ops wire it to a local subprocess or an SSH host alike — and turns the
dump into a FlagCatalogue. Dumps are cached per host and version under $XDG_CACHE_HOME/spectui/flags.
`catalogue_for_host` picks: the exact bundled catalogue when spectui ships the release, else the host's own,
else the nearest bundled one with a note saying why.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from spectui.core.launch.catalogue import (
    CataloguePick,
    FlagCatalogue,
    catalogue_from_json,
    load_catalogue,
    pick_catalogue,
)

Run = Callable[[Sequence[str]], str]
MARKER = "SPECTUI-FLAGS "
_SAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


class HostFlagsError(Exception):
    """The host's SGLang could not be read (no sglang, an import error, unexpected output)."""


def dump_script() -> str:
    """The text of data/dump_flags.py (sent to the host's Python as `-c`)."""
    return resources.files("spectui.data").joinpath("dump_flags.py").read_text(encoding="utf-8")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spectui" / "flags"


def _cache_path(root: Path, host: str, version: str) -> Path:
    return root / (_SAFE.sub("_", host) or "host") / f"sglang-{_SAFE.sub('_', version)}.json"


def marker_json(stdout: str, marker: str) -> object:
    """The JSON after `marker` on the last line that starts with it (a script run on the host prints it among
    whatever SGLang logs). LookupError when no line has it; ValueError when it is not JSON."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            return json.loads(line[len(marker):])
    raise LookupError(marker)


def parse_dump(stdout: str) -> dict[str, Any]:
    """The JSON object of a dump_flags.py run. Raises HostFlagsError."""
    try:
        data = marker_json(stdout, MARKER)
    except LookupError:
        raise HostFlagsError("no flag dump in the output (is SGLang installed for that Python?)") from None
    except ValueError as exc:
        raise HostFlagsError(f"unreadable flag dump ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("flags"), list) or not data["flags"]:
        raise HostFlagsError("the flag dump holds no flags")
    return data


def needs_host(version: str | None) -> bool:
    """Whether `version` calls for the host's own flags: spectui does not ship exactly that release (or the
    release is unknown, and the host can say)."""
    try:
        pick = pick_catalogue(version)
    except ValueError:
        return True
    return not (pick.exact and version)


def cached_catalogue(host: str, version: str | None, cache: Path | None = None) -> FlagCatalogue | None:
    """The cached dump of `host`'s SGLang `version`, or None (no version, no entry, a broken entry)."""
    if not version:
        return None
    path = _cache_path(cache if cache is not None else cache_dir(), host, version)
    try:
        return catalogue_from_json(json.loads(path.read_text(encoding="utf-8")), version)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_host_catalogue(run: Run, python: str = "python", *, host: str = "local", version: str | None = None,
                        cache: Path | None = None) -> FlagCatalogue:
    """The host's SGLang flags. `version` (e.g. from /server_info) lets a cached dump answer without running
    anything. Raises HostFlagsError (any failure of `run` included)."""
    root = cache if cache is not None else cache_dir()
    hit = cached_catalogue(host, version, root)
    if hit is not None:
        return hit  # a broken cache entry is None: dumped again
    try:
        stdout = run([python, "-c", dump_script()])
    except Exception as exc:  # a failed ssh/subprocess is one reason among others to fall back
        raise HostFlagsError(f"running {python} failed: {exc}") from None
    data = parse_dump(stdout)
    dumped = str(data.get("sglang_version") or version or "unknown")
    try:
        catalogue = catalogue_from_json(data, dumped)
    except (KeyError, TypeError) as exc:
        raise HostFlagsError(f"the flag dump has an unexpected shape ({exc})") from None
    path = _cache_path(root, host, dumped)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    except OSError:
        pass  # no cache is only slower
    return catalogue


def catalogue_for_host(version: str | None, run: Run | None, python: str = "python", *, host: str = "local",
                       cache: Path | None = None) -> tuple[FlagCatalogue, CataloguePick]:
    """(catalogue, which one and why) for the SGLang `version` running on `host`. Raises ValueError only for
    a version that is not a release number and cannot be read from the host either."""
    try:
        bundled: CataloguePick | None = pick_catalogue(version)
    except ValueError:
        bundled = None
    if bundled is not None and bundled.exact and version:
        return load_catalogue(bundled.version), bundled
    reason = "no way to run the host's Python"
    if run is not None:
        try:
            cat = read_host_catalogue(run, python, host=host, version=version, cache=cache)
            exact = version is None or cat.version == version
            return cat, CataloguePick(cat.version, exact, f"read from {host}'s own SGLang {cat.version} "
                                      f"({python}: ServerArgs.add_cli_args)", "host")
        except HostFlagsError as exc:
            reason = str(exc)
    if bundled is None:
        raise ValueError(f"SGLang {version!r} is not a release spectui knows, and reading {host}'s flags "
                         f"failed: {reason}")
    note = bundled.why if bundled.exact else f"{bundled.why}; reading {host}'s own flags failed: {reason}"
    return load_catalogue(bundled.version), CataloguePick(bundled.version, bundled.exact, note, "bundled")
