"""The Rich Console every CLI command prints its tables with: a terminal's own width on a terminal; piped
or redirected to a file, a wide one, so a table keeps its full columns ("accept len", not "acce…").
COLUMNS, when set, wins (as rich reads it)."""

from __future__ import annotations

import os
import sys
from typing import Any

WIDE = 200  # columns of a table sent to a file or a pipe (rich assumes 80 there)


def cli_console(*, stderr: bool = False, **kwargs: Any) -> Any:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        tty = False
    if "width" not in kwargs and not tty and not os.environ.get("COLUMNS"):
        kwargs["width"] = WIDE
    return Console(stderr=stderr, **kwargs)
