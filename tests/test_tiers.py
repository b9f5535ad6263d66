"""The fast tier (`-m "not slow"`) leaves out what starts real processes and keeps the unit tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _selected(*paths: str) -> int:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "--collect-only", "-m", "not slow", *paths],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode in (0, 5), out.stdout[-2000:] + out.stderr[-2000:]  # 5: every test deselected
    found = re.search(r"(\d+)(?:/\d+)? tests? collected", out.stdout)
    assert found or "no tests collected" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    return int(found.group(1)) if found else 0


def test_process_starting_tests_are_slow_and_unit_tests_are_not() -> None:
    assert _selected("tests/sources/test_ssh_e2e.py", "tests/ops/test_sweep_e2e.py",
                     "tests/ui/test_dashboard.py") == 0
    unit = _selected("tests/core/test_flag_value.py")
    assert unit == 20  # every case of the module (tests/core/test_flag_value.py: 15 + 3 + 1 + 1)
