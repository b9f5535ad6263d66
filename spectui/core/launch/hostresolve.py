"""Judging a launch by the host's own SGLang: for a source build (a `.devN` or `+local` version, or one
spectui ships no release of), what its own argparse and ServerArgs resolution did with the command line
(data/resolve_host.py, run with the server's Python by sources.hostresolve_run) replaces the nearest
release's replayed rules. Pure: the dump in, a Resolution out.

`judge(base, dump)`: `base` is spectui's own resolution of the same argv with the host's flag catalogue
(what was asked, the notes on the flags); the outcome, the resolved values, the warnings and the error
come from the host. An override is still an override: `find_overrides(requested, host effective)`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from spectui.core.launch.catalogue import CataloguePick
from spectui.core.launch.explain import explain_error, find_overrides
from spectui.core.launch.hostflags import marker_json
from spectui.core.launch.resolve import Resolution, ResolveError

MARKER = "SPECTUI-RESOLVE "
SOURCE = "host-resolution"
# A release as PyPI ships it: X.Y.Z with an optional .postN. Anything else (.devN, +local, rcN) was built
# from a source tree whose rules may differ from the nearest release's.
_RELEASE = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:\.?post\d+)?$")
# What a resolution run on a machine without the server's GPU raises for want of it: then the host cannot
# say, and the replayed rules judge (with a note), never a verdict of "SGLang refuses".
_NO_DEVICE = re.compile(r"no (?:cuda|nvidia|gpu)|cuda (?:driver|runtime)|found no nvidia driver|"
                        r"torch not compiled with cuda|cuda_visible_devices|device-side|hip|nvml", re.IGNORECASE)


class HostResolveError(Exception):
    """The host's SGLang could not resolve here (no output, no GPU for a GPU-only check): say why."""


def script() -> str:
    return resources.files("spectui.data").joinpath("resolve_host.py").read_text(encoding="utf-8")


def is_source_build(version: str | None) -> bool:
    """Whether `version` names a build from source (judged by the host's own SGLang), not a release."""
    return bool(version) and not _RELEASE.match(str(version).strip())


def parse(stdout: str) -> dict[str, Any]:
    """The answer data/resolve_host.py printed. Raises HostResolveError."""
    try:
        data = marker_json(stdout, MARKER)
    except LookupError:
        raise HostResolveError("no resolution in the output (is SGLang installed for that Python?)") from None
    except ValueError as exc:
        raise HostResolveError(f"unreadable resolution ({exc})") from None
    if not isinstance(data, dict) or data.get("outcome") not in ("ok", "error", "argparse_error"):
        raise HostResolveError("the resolution holds no outcome")
    return data


def judge(base: Resolution, dump: Mapping[str, Any], *, device: str | None = None) -> Resolution:
    """`base` with the host's own outcome. HostResolveError when the host failed for want of a GPU that
    the server has (device not cpu): then it cannot say, and the caller keeps `base` with a note."""
    version = str(dump.get("sglang_version") or base.version)
    pick = CataloguePick(base.catalogue_version or version, True,
                         f"judged by the host's own SGLang {version} (its argparse and ServerArgs resolution, "
                         "run with the server's Python)", SOURCE)
    outcome = dump.get("outcome")
    warnings = [str(w) for w in dump.get("warnings") or [] if isinstance(w, str)]
    if outcome == "argparse_error":
        return dataclasses.replace(base, outcome="argparse_error", argparse_error=str(dump.get("error_message")),
                                   error=None, effective=None, server_args=None, overrides=[],
                                   warnings=warnings, catalogue=pick, startup_failure=None)
    if outcome == "error":
        etype, msg = str(dump.get("error_type") or "Exception"), str(dump.get("error_message") or "")
        if (device or "cuda") != "cpu" and _NO_DEVICE.search(f"{etype} {msg}"):
            raise HostResolveError(f"the host's SGLang needs the server's GPU to resolve ({etype}: {msg[:120]})")
        err = ResolveError(etype, msg, explain_error(etype, msg, base.requested), dump.get("raised_at"))
        return dataclasses.replace(base, outcome="error", error=err, effective=None, server_args=None,
                                   overrides=[], warnings=warnings, catalogue=pick, startup_failure=None)
    effective = dump.get("effective")
    if not isinstance(effective, dict):
        raise HostResolveError("the host's resolution lists no resolved values")
    return dataclasses.replace(base, outcome="ok", error=None, argparse_error=None, effective=dict(effective),
                               server_args=dict(effective), warnings=warnings, catalogue=pick,
                               overrides=find_overrides(base.requested, effective),
                               startup_failure=base.startup_failure)
