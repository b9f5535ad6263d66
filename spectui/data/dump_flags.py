"""Print the host's SGLang launch_server flags as one JSON object (the shape of spectui/data/catalogues).

Run with the server's own Python (`/proc/PID/exe`, or `python` on PATH): it imports only
`sglang.srt.server_args`, builds an argparse parser and calls `ServerArgs.add_cli_args(parser)` on it, as
SGLang does at start-up. No GPU is needed and nothing is launched. Standard library only; Python 3.8+.
Output: one line `SPECTUI-FLAGS <json>` on stdout (whatever SGLang prints while importing goes to stderr).
"""

import argparse
import contextlib
import json
import sys


def _jsonable(value):
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _type_name(conv):
    if conv is None:
        return None
    return getattr(conv, "__name__", None) or type(conv).__name__


def _version():
    for mod in ("sglang.version", "sglang"):
        try:
            module = __import__(mod, fromlist=["__version__"])
            return str(module.__version__)
        except Exception:  # noqa: BLE001 - any failure: try the next place
            continue
    return None


def dump():
    with contextlib.redirect_stdout(sys.stderr):
        from sglang.srt.server_args import ServerArgs

        parser = argparse.ArgumentParser(add_help=True)
        ServerArgs.add_cli_args(parser)
        version = _version()
    flags = []
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its actions here
        if not action.option_strings or isinstance(action, argparse._HelpAction):  # noqa: SLF001
            continue
        choices = action.choices
        flags.append({
            "flags": list(action.option_strings),
            "dest": action.dest,
            "type": _type_name(action.type),
            "nargs": action.nargs,
            "action": type(action).__name__,
            "default": _jsonable(action.default),
            "choices": [_jsonable(c) for c in choices] if choices is not None else None,
        })
    return {"sglang_version": version, "flags": flags,
            "note": "dumped on the host by spectui/data/dump_flags.py"}


if __name__ == "__main__":
    sys.stdout.write("SPECTUI-FLAGS " + json.dumps(dump()) + "\n")
