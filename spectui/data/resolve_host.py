"""Resolve one launch command with the host's own SGLang, the way `python -m sglang.launch_server` does.

Run by spectui with the server's own Python (`python -c <this file's text> <argv as JSON>`), with
CUDA_VISIBLE_DEVICES emptied: SGLang's argparse (`prepare_server_args`), its ServerArgs resolution
(`__post_init__`; `resolve_once` from 0.5.19) and `check_server_args`, as the launcher and the engine run
them before any model weight is loaded. Prints one line, MARKER + JSON:

    {"outcome": "ok" | "error" | "argparse_error", "sglang_version": ..., "effective": {field: value},
     "warnings": [...], "error_type": ..., "error_message": ..., "raised_at": ...}

It never starts a server, never opens a port, and never loads weights; it only reads what resolution
reads (the model's config.json). No spectui import: it runs where only SGLang is installed.
"""

import contextlib
import dataclasses
import io
import json
import logging
import sys
import traceback

MARKER = "SPECTUI-RESOLVE "


def _plain(value, depth=0):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth < 3 and isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if depth < 3 and isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return repr(value)[:200]


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        with contextlib.suppress(Exception):  # a broken log call is not resolution's outcome
            self.messages.append(record.getMessage()[:500])


def _raised_at(tb):
    where = None
    for frame in traceback.extract_tb(tb):
        if "sglang" in frame.filename.replace("\\", "/"):
            where = frame.name
    return where


def main():
    argv = json.loads(sys.argv[1])
    keep = _Keep()
    original = logging.basicConfig

    def basic_config(*a, **kw):  # prepare_server_args resets the root logger's handlers (force=True)
        original(*a, **kw)
        logging.getLogger().addHandler(keep)

    logging.basicConfig = basic_config
    logging.getLogger().addHandler(keep)
    out = {"outcome": "ok", "warnings": keep.messages}
    try:
        from sglang.version import __version__ as version
    except Exception:  # noqa: BLE001
        version = None
    out["sglang_version"] = version
    err = io.StringIO()
    try:
        from sglang.srt.server_args import prepare_server_args

        with contextlib.redirect_stderr(err):
            try:
                args = prepare_server_args(argv)
            except SystemExit as exc:  # argparse said no (exit 2) or printed help (exit 0)
                lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
                out.update(outcome="argparse_error" if exc.code else "ok",
                           error_message=lines[-1] if lines else f"exit {exc.code}")
                print(MARKER + json.dumps(out))
                return
        resolve_once = getattr(args, "resolve_once", None)
        if callable(resolve_once):  # 0.5.19+: resolution is its own step (idempotent: "once")
            resolve_once()
        check = getattr(args, "check_server_args", None)
        if callable(check):
            check()
        resolved = getattr(args, "resolved_dict", None)
        values = resolved() if callable(resolved) else {
            f.name: getattr(args, f.name, None) for f in dataclasses.fields(args)}
        out["effective"] = {k: _plain(v) for k, v in values.items()}
    except Exception as exc:  # noqa: BLE001 - what SGLang raised is the answer
        out.update(outcome="error", error_type=type(exc).__name__, error_message=str(exc)[:500],
                   raised_at=_raised_at(exc.__traceback__))
    print(MARKER + json.dumps(out))


if __name__ == "__main__":
    main()
