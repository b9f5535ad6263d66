"""Layer rules: core stays pure and the import-linter contracts hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_imports_no_ui_or_network_libraries() -> None:
    code = (
        "import sys, importlib, pkgutil, spectui.core as c\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    importlib.import_module('spectui.core.' + m.name)\n"
        "bad = sorted(n for n in ('textual', 'rich', 'asyncssh', 'httpx', 'prometheus_client') if n in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"spectui.core pulled in: {out.stdout.strip()}"


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports")
    assert exe, "import-linter is a test dependency (pip install -e '.[test]')"
    out = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_help_is_fast_and_lazy() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from spectui import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: cli.main(['--help'])\n"
        "    except SystemExit: pass\n"
        "print(','.join(sorted(n for n in ('textual', 'asyncssh', 'httpx') if n in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"`spectui --help` imported {out.stdout.strip()}"
