"""SGLang flag catalogues: which releases are bundled, and argparse-exact parsing of a release's flags.

A catalogue is the list of argparse actions one SGLang release registers (dumped from its own
`ServerArgs.add_cli_args`). To reproduce argparse exactly — unique-prefix abbreviations, ambiguity
messages, `--flag=value`, choices, type errors, the order of "unrecognized arguments" — the catalogue is
rebuilt into a real `argparse.ArgumentParser` whose `error()` raises instead of exiting.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from spectui.core.launch.suggest import suggest_flags
from spectui.core.versions import parse_version

# Deprecation notices printed at parse time (exact text, as recorded from real runs).
_DEPRECATION_TEXT: dict[str, str] = {
    "--disable-cuda-graph": (
        "\x1b[1;33m'--disable-cuda-graph' is deprecated and will be removed in a future release. "
        "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.\x1b[0m"
    ),
}


class ArgparseFailure(Exception):
    """argparse would print `usage` then `<prog>: error: <message>` and exit 2."""

    def __init__(self, message: str, *, prog: str = "", usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog
        self.usage = usage

    def __str__(self) -> str:
        return self.message


class DeprecatedFlagUsed(Exception):
    """SGLang's `DeprecatedAction` raises ValueError(help) when the flag is used."""

    def __init__(self, flag: str) -> None:
        super().__init__(flag)
        self.flag = flag


@dataclass(frozen=True, slots=True)
class FlagSpec:
    """One argparse action of a release."""

    flags: tuple[str, ...]
    dest: str
    action: str
    type: str | None
    nargs: int | str | None
    default: Any
    choices: tuple[Any, ...] | None

    @property
    def name(self) -> str:
        return self.flags[0]

    @property
    def takes_value(self) -> bool:
        return self.nargs != 0


@dataclass(frozen=True)
class ParsedArgs:
    """What argparse produced: only flags given on the command line, plus the defaults."""

    given: dict[str, Any]  # dest -> value, in command-line order
    defaults: dict[str, Any]  # dest -> default for every dest
    typed: dict[str, str] = field(default_factory=dict)  # dest -> option string as typed (may be a prefix)
    parse_warnings: tuple[str, ...] = ()  # deprecation notices argparse-time actions print
    help_requested: bool = False

    @property
    def values(self) -> dict[str, Any]:
        return {**self.defaults, **self.given}


def _converter(name: str | None) -> Callable[[str], Any] | None:
    """Converters named like SGLang's, so "invalid <name> value" messages match."""
    if name in (None, "str"):
        return None if name is None else str
    if name == "int":
        return int
    if name == "float":
        return float

    def nullable_str(v: str) -> str | None:
        return None if v.lower() in ("none", "null", "") else v

    def json_list_type(v: str) -> list[Any]:
        return list(json.loads(v))

    def loads(v: str) -> Any:
        return json.loads(v)

    def human_readable_int(v: str) -> int:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)\s*", v)
        if not m:
            raise ValueError(v)
        scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[m.group(2).lower()]
        return int(float(m.group(1)) * scale)

    def passthrough(v: str) -> str:
        return v

    known = {f.__name__: f for f in (nullable_str, json_list_type, loads, human_readable_int)}
    if name in known:
        return known[name]
    passthrough.__name__ = name or "str"
    return passthrough


class _HelpRequested(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kw: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, help="show help")

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        raise _Help  # argparse prints help and exits here, before checking required flags


class _Help(Exception):
    pass


class _Deprecated(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        raise DeprecatedFlagUsed(self.option_strings[0])


class _DeprecatedStoreTrue(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, True)
        note = _DEPRECATION_TEXT.get(self.option_strings[0])
        if note:
            namespace.__dict__.setdefault("__warnings__", []).append(note)


class _DeprecatedAliasStore(argparse.Action):
    """SGLang's DeprecatedAliasStoreAction (0.5.14+): stores into the new flag's dest and warns."""

    note = ""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.__dict__.setdefault("__warnings__", []).append(self.note)


def _alias_note(old: str, new: str) -> str:
    return f"\x1b[1;33m'{old}' is deprecated and will be removed in a future release. Use '{new}' instead.\x1b[0m"


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgparseFailure(message, prog=self.prog, usage=self.format_usage())

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise ArgparseFailure(message or f"exit {status}", prog=self.prog, usage=self.format_usage())


def _formatter(prog: str) -> argparse.HelpFormatter:
    # A fixed width: what argparse uses when stdout is not a terminal (80 columns - 2).
    return argparse.HelpFormatter(prog, width=78)


class FlagCatalogue:
    """The flags of one SGLang release, with argparse's own matching."""

    def __init__(self, version: str, specs: Sequence[FlagSpec], *, model_path_required: bool = True) -> None:
        self.version = version
        self.specs: tuple[FlagSpec, ...] = tuple(specs)
        self.by_dest: dict[str, FlagSpec] = {s.dest: s for s in self.specs}
        self.by_flag: dict[str, FlagSpec] = {f: s for s in self.specs for f in s.flags}
        self._required = model_path_required and "model_path" in self.by_dest
        self._parsers: dict[str, argparse.ArgumentParser] = {}

    @property
    def option_strings(self) -> list[str]:
        return ["-h", "--help", *self.by_flag]

    def defaults(self) -> dict[str, Any]:
        return {s.dest: s.default for s in self.specs}

    def _parser(self, prog: str) -> argparse.ArgumentParser:
        if prog in self._parsers:
            return self._parsers[prog]
        p = _RaisingParser(prog=prog, add_help=False, formatter_class=_formatter)
        p.add_argument("-h", "--help", action=_HelpRequested, dest="__help__")
        for s in self.specs:
            kw: dict[str, Any] = {"dest": s.dest, "default": argparse.SUPPRESS}
            flags = list(s.flags)
            if s.action in ("_StoreTrueAction",):
                kw["action"] = "store_true"
            elif s.action == "BooleanOptionalAction":
                flags = [f for f in flags if not f.startswith("--no-")]
                kw["action"] = argparse.BooleanOptionalAction
            elif s.action == "DeprecatedAction":
                kw.update(action=_Deprecated, nargs=0)
            elif s.action in ("DeprecatedStoreTrueAction", "DeprecatedStoreConstAction"):
                kw.update(action=_DeprecatedStoreTrue, nargs=0)
            else:
                if s.action == "DeprecatedAliasStoreAction":
                    new = next((o.flags[0] for o in self.specs if o.dest == s.dest and o is not s
                                and not o.action.startswith("Deprecated")), s.dest)
                    kw["action"] = type("_Alias", (_DeprecatedAliasStore,), {"note": _alias_note(s.flags[0], new)})
                conv = _converter(s.type)
                if conv is not None:
                    kw["type"] = conv
                if s.nargs not in (None, 0):
                    kw["nargs"] = s.nargs
                if s.choices is not None:
                    kw["choices"] = list(s.choices)
            if s.dest == "model_path" and self._required:
                kw["required"] = True
            p.add_argument(*flags, **kw)
        self._parsers[prog] = p
        return p

    def parse_args(self, args: Sequence[str], prog: str = "launch_server.py") -> ParsedArgs:
        """Parse like SGLang's argparse; raises ArgparseFailure with argparse's exact message."""
        parser = self._parser(prog)
        try:
            ns = parser.parse_args(list(args))
        except _Help:
            return ParsedArgs(given={}, defaults=self.defaults(), help_requested=True)
        given = dict(vars(ns))
        help_requested = False
        warnings = tuple(given.pop("__warnings__", ()))
        typed = _typed_flags(self, args, given)
        return ParsedArgs(given=given, defaults=self.defaults(), typed=typed,
                          parse_warnings=warnings, help_requested=help_requested)

    def format_usage(self, prog: str = "launch_server.py") -> str:
        """The usage block argparse prints before an error line."""
        return self._parser(prog).format_usage()

    def canonical(self, flag: str) -> str | None:
        """Option string argparse would match for `flag` (exact or unique prefix), else None."""
        name = flag.split("=", 1)[0]
        if name in self.by_flag or name in ("-h", "--help"):
            return name
        if not name.startswith("--"):
            return None
        hits = [o for o in self.option_strings if o.startswith(name)]
        return hits[0] if len(hits) == 1 else None

    def spec_for(self, flag: str) -> FlagSpec | None:
        name = self.canonical(flag)
        return self.by_flag.get(name) if name else None

    def prefix_matches(self, flag: str) -> list[str]:
        name = flag.split("=", 1)[0]
        return [o for o in self.option_strings if o.startswith(name)] if name.startswith("--") else []

    def suggest(self, flag: str) -> list[str]:
        """Did-you-mean for a flag this release does not accept."""
        return suggest_flags(flag, self.option_strings, self.prefix_matches(flag))


def _typed_flags(cat: FlagCatalogue, args: Sequence[str], given: Mapping[str, Any]) -> dict[str, str]:
    typed: dict[str, str] = {}
    for a in args:
        if a == "--":
            break
        spec = cat.spec_for(a) if a.startswith("--") else None
        if spec is not None and spec.dest in given:
            typed[spec.dest] = a.split("=", 1)[0]
    return typed


@dataclass(frozen=True, slots=True)
class CataloguePick:
    """Which flag catalogue judges a release: `version` (bundled, or the host's own), whether it is the
    release asked for, and why it was chosen. `to_json()` is `flags --json`'s "catalogue"."""

    version: str
    exact: bool
    why: str
    source: str = "bundled"  # "bundled" | "host"

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "exact": self.exact, "why": self.why, "source": self.source}


def _catalogue_dir() -> Any:
    return resources.files("spectui.data").joinpath("catalogues")


@functools.cache
def known_versions() -> list[str]:
    """Bundled releases, oldest first (every SGLang release from 0.4.6 to the newest shipped)."""
    vs = []
    for name in (p.name for p in _catalogue_dir().iterdir()):
        for ext in (".json.gz", ".json"):
            if name.startswith("sglang-") and name.endswith(ext):
                vs.append(name[len("sglang-"):-len(ext)])
    return sorted(set(vs), key=parse_version)


def _known_text() -> str:
    known = known_versions()
    return f"{known[0]} … {known[-1]}, {len(known)} releases"


def pick_catalogue(v: str | None) -> CataloguePick:
    """The bundled catalogue for release `v`: the exact release when shipped, else the same release line's
    newest build (a .postN or dev build not shipped), else the nearest older release. Raises ValueError."""
    known = known_versions()
    if v is None or v.strip() in ("", "latest"):
        return CataloguePick(known[-1], True, f"no release given: the newest bundled, {known[-1]}")
    raw = v.strip().removeprefix("sglang==").removeprefix("v")
    try:
        want = parse_version(raw)
    except ValueError:
        raise ValueError(f"unknown SGLang version {v!r}; known: {_known_text()}") from None
    if raw in known:
        return CataloguePick(raw, True, f"the bundled catalogue of SGLang {raw}")
    exact = [k for k in known if parse_version(k) == want]
    if exact:  # "0.5.10.post0", "0.5.6" spelled differently
        return CataloguePick(exact[0], True, f"the bundled catalogue of SGLang {exact[0]}")
    same_line = [k for k in known if parse_version(k)[:3] == want[:3]]
    if same_line:
        return CataloguePick(same_line[-1], False, f"SGLang {raw} is not bundled: using the bundled catalogue "
                             f"of {same_line[-1]} (same release line); its flags may differ slightly")
    below = [k for k in known if parse_version(k) <= want]
    if not below:
        raise ValueError(f"SGLang {raw} is older than every bundled release; known: {_known_text()}")
    newer = " (newer than every bundled release)" if below[-1] == known[-1] else ""
    return CataloguePick(below[-1], False, f"SGLang {raw} is not bundled{newer}: using the nearest older "
                         f"release {below[-1]}; flags added or changed since then are misjudged "
                         "(upgrade spectui, or let it read the host's own SGLang)")


def pick_version(v: str | None) -> tuple[str, str | None]:
    """(bundled version to use, warning if it is not exactly the one asked for). Raises ValueError."""
    pick = pick_catalogue(v)
    return pick.version, None if pick.exact else pick.why


def catalogue_from_json(data: Mapping[str, Any], version: str | None = None) -> FlagCatalogue:
    """A catalogue from the JSON shape of spectui/data/catalogues (also what data/dump_flags.py prints)."""
    specs = [
        FlagSpec(
            flags=tuple(f["flags"]), dest=f["dest"], action=f["action"], type=f.get("type"),
            nargs=f.get("nargs"), default=f.get("default"),
            choices=tuple(f["choices"]) if f.get("choices") is not None else None,
        )
        for f in data["flags"]
    ]
    return FlagCatalogue(version or str(data.get("sglang_version") or "unknown"), specs)


@functools.cache
def load_catalogue(version: str) -> FlagCatalogue:
    """The bundled catalogue of exactly `version` (use pick_version first). Raises ValueError."""
    if version not in known_versions():
        raise ValueError(f"no bundled catalogue for SGLang {version}; known: {_known_text()}")
    folder = _catalogue_dir()
    packed = folder.joinpath(f"sglang-{version}.json.gz")
    if packed.is_file():
        text = gzip.decompress(packed.read_bytes()).decode("utf-8")
    else:
        text = folder.joinpath(f"sglang-{version}.json").read_text(encoding="utf-8")
    return catalogue_from_json(json.loads(text), version)
