"""#24: a CLI table piped to a file keeps its full width (rich assumes 80 columns off a terminal: the sweep
table's headers came out as "acce…", "per-…"); COLUMNS, when set, still wins; a terminal keeps its own."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from spectui.commands.sweep.view import print_results
bench = {"output_tokens_per_s": 812.5, "tpot_ms": {"p50": 7.25, "p99": 11.5}, "speedup": {"output_tokens_per_s": 1.42},
         "per_request_tokens_per_s": {"mean": 101.5}, "accept_len": {"mean": 2.61}}
cfg = {"status": "ok", "set": {"speculative_num_steps": 3, "speculative_eagle_topk": 1,
       "speculative_num_draft_tokens": 4}, "effective": {"speculative_num_steps": 3, "speculative_eagle_topk": 1,
       "speculative_num_draft_tokens": 4}, "bench": bench}
failed = {**cfg, "status": "failed", "bench": None, "reason": "the server did not become healthy within 600 s: see its log"}
print_results({"configs": [cfg, failed], "best": 0, "pareto": [0], "why": "fastest per request",
               "restore": {"pid": 1, "healthy": True}, "applied": "original"}, plot=False)
"""


def run(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60,
                         env={**env, **env_extra}, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_piped_tables_keep_their_headers() -> None:
    text = run({})
    for header in ("accept len", "per-req tok/s", "TPOT p50", "TPOT p99", "x base", "status / cause"):
        assert header in text, text
    assert "…" not in text
    assert "failed: the server did not become healthy within 600 s" in text  # one row, not wrapped
    assert max(len(line) for line in text.splitlines()) > 80


def test_columns_still_wins() -> None:
    text = run({"COLUMNS": "60"})
    assert max(len(line) for line in text.splitlines()) <= 60


def test_cli_console_width_rule(monkeypatch) -> None:
    from spectui.commands import console

    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

        def write(self, _s: str) -> int:
            return 0

        def flush(self) -> None:
            pass

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", Stream(False))
    assert console.cli_console().width == console.WIDE
    monkeypatch.setattr(sys, "stdout", Stream(True))
    assert console.cli_console(width=90).width == 90
