"""`spectui check FILE` on an incident bundle: its log is triaged like a log file, with the bundle's launch
command and SGLang version as defaults, and every line number mapped back to the original log."""

from __future__ import annotations

import argparse
import dataclasses
import io
import re
from typing import IO, Any

_LINE_RE = re.compile(r"\bline (\d+)\b")


def is_bundle_input(path: str) -> bool:
    """A local file that is (or claims to be: gzip or tar) a bundle; read_bundle then says what is wrong.
    A plain log (neither gzip nor tar in its first bytes) is told apart before any bundle code is imported:
    that import was ~0.15 s of every `check` start-up."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    if head[:2] != b"\x1f\x8b" and head[257:262] != b"ustar":
        return False
    from spectui.ui.bundle_replay import bundle_file

    return bundle_file(path) is not None


def open_bundle(args: argparse.Namespace) -> tuple[IO[bytes], str, Any]:
    """(log stream, display name, bundle); fills args.launch / args.sglang_version when not given.
    Raises BundleError (one line, exit 2)."""
    from spectui.bundle import read_bundle

    bundle = read_bundle(args.path)
    if not args.launch and bundle.launch_command:
        args.launch = bundle.launch_command
    if not args.sglang_version and bundle.sglang_version:
        from spectui.core.launch import pick_version

        try:
            pick_version(bundle.sglang_version)
            args.sglang_version = bundle.sglang_version
        except ValueError:
            pass  # a release spectui has no catalogue for: the rules guess, as for a plain log
    return io.BytesIO(bundle.log_bytes), f"{args.path} (bundle log)", bundle


def remap_lines(result: Any, bundle: Any) -> Any:
    """The check result with bundle line numbers replaced by the original log's (`Bundle.original_line`)."""
    from spectui.core.rules import Diagnosis

    def orig(n: int | None) -> int | None:
        if n is None:
            return None
        mapped = bundle.original_line(n)
        return mapped if mapped is not None else n

    def text(s: str) -> str:
        return _LINE_RE.sub(lambda m: f"line {orig(int(m.group(1)))}", s)

    result.errors = [dataclasses.replace(e, line=orig(e.line), end_line=orig(e.end_line)) for e in result.errors]
    diagnoses = []
    for d in result.diagnoses:
        if isinstance(d, Diagnosis):
            d = dataclasses.replace(d, evidence=tuple(text(str(x)) for x in d.evidence),
                                    first_line=orig(d.first_line), last_line=orig(d.last_line))
        diagnoses.append(d)
    result.diagnoses = diagnoses
    result.warnings = {k: dataclasses.replace(w, line=orig(w.line)) for k, w in result.warnings.items()}
    result.launches = [_snap(s, orig) for s in result.launches]
    result.current = _snap(result.current, orig)
    return result


def _snap(s: Any, orig: Any) -> Any:
    fields = {k: orig(getattr(s, k)) for k in ("launch_first_line", "last_line")
              if isinstance(getattr(s, k, None), int)}
    try:
        return dataclasses.replace(s, **fields) if fields else s
    except (TypeError, ValueError):
        return s
