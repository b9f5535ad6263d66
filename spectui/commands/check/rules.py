"""Compiled rules cached on disk, so `spectui check` skips TOML, the pydantic schema and compiling per run.

The cache is keyed by everything the compiled rules depend on: spectui's version, the Python version,
size and mtime of every spectui/core module (the compiler and the record kinds it checks names against)
and of every rule file in the built-in library and the given directories (and which files there are).
Any change gives a new key, hence a fresh load. A cache that cannot be read or written is ignored: the
rules are then loaded from their files as without it. The file holds pickled rules written by this
user's own spectui; [[examples]] are left out (only `spectui rules test` runs them, and it loads the
files). Rules never run code, and neither may their cache: it is read with an unpickler that can only
build spectui.core classes and compiled regexes (Python docs, "Restricting Globals"), so a planted
cache file fails to load and the rules come from their files.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import zlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

_KEEP = 8  # cache files kept (one per distinct set of rule directories and versions)


def cache_dir_default() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spectui"


def _stat_line(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path} -"
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def cache_key(extra_dirs: Sequence[Path]) -> str | None:
    """What the compiled rules depend on, one line each; None when the built-in rules are not plain files."""
    from importlib import resources

    import spectui
    import spectui.core

    builtin = resources.files("spectui.builtin_rules")
    if not isinstance(builtin, Path):  # e.g. inside a zip: no mtimes to key on
        return None
    core = Path(spectui.core.__file__).parent
    lines = [spectui.__version__, sys.version]
    lines += [_stat_line(p) for p in sorted(core.rglob("*.py"))]
    lines += [_stat_line(p) for p in sorted(builtin.glob("*.toml"))]
    lines.append(_stat_line(Path(spectui.__file__).parent / "data" / "messages" / "sglang-messages.json.gz"))
    for d in extra_dirs:
        d = Path(d).absolute()
        lines.append(f"dir {d} {d.is_dir()}")
        lines += [_stat_line(p) for p in sorted(d.glob("*.toml"))] if d.is_dir() else []
    return "\n".join(lines)


def load_rules_cached(extra_dirs: Sequence[Path] = (), cache_dir: Path | None = None) -> tuple[list[Any], list[str]]:
    """load_rules(extra_dirs), from the cache when nothing it depends on changed since it was written."""
    cache_dir = cache_dir_default() if cache_dir is None else cache_dir
    key = cache_key(extra_dirs)
    # The file name only spreads keys over files (crc32 is cheap to import); the full key inside decides.
    path = cache_dir / f"rules-{zlib.crc32(key.encode()):08x}.pickle" if key else None
    if path is not None:
        try:
            with open(path, "rb") as f:
                stored, rules, errors = _RulesUnpickler(f).load()
            if stored == key and isinstance(rules, list) and isinstance(errors, list):
                return rules, errors
        except Exception:  # noqa: BLE001 - missing, truncated or stale cache: load the files instead
            pass
    from spectui.core.rules import load_rules

    rules, errors = load_rules(extra_dirs)
    if path is not None and key is not None:
        _write(path, (key, [replace(r, examples=()) for r in rules], errors))
    return rules, errors


_SAFE_CALLABLES = frozenset({("re", "_compile"), ("copyreg", "_reconstructor")})
_SAFE_BUILTINS = frozenset({"frozenset", "set", "tuple", "list", "dict", "slice", "complex", "bytearray"})


class _RulesUnpickler(pickle.Unpickler):
    """Builds only what compiled rules hold: spectui.core classes, re.compile'd patterns, plain builtins."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("spectui.core.") and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        elif (module, name) in _SAFE_CALLABLES or (module == "builtins" and name in _SAFE_BUILTINS):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"rules cache may not build {module}.{name}")


def _write(path: Path, content: tuple[str, list[Any], list[str]]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump(content, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent run reads the old file or the new one, never half
        old = sorted(path.parent.glob("rules-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in old[_KEEP:]:
            stale.unlink(missing_ok=True)
    except OSError:  # read-only or full cache directory: run without the cache
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
