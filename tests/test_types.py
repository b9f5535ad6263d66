"""The type checker is part of the suite: mypy strict on spectui/core, basic on the rest ([tool.mypy] in
pyproject.toml lists what basic mode still lets through, module by module)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_no_errors() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


def test_core_is_checked_strictly_and_nothing_ignores_whole_packages() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    core = [o for o in conf["overrides"] if "spectui.core.*" in o["module"]]
    assert core and core[0]["disallow_untyped_defs"] and core[0]["disallow_any_generics"]
    assert not any(o.get("ignore_errors") for o in conf["overrides"])
    assert not any(m.startswith("spectui.core") for o in conf["overrides"] if "disable_error_code" in o
                   for m in o["module"])


def test_strict_core_rejects_what_basic_mode_lets_through(tmp_path: Path) -> None:
    """The project's own settings: an untyped function is an error in a spectui.core module, not elsewhere."""
    for pkg in ("spectui", "spectui/core", "spectui/ops"):
        (tmp_path / pkg).mkdir(exist_ok=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    for pkg in ("core", "ops"):
        (tmp_path / "spectui" / pkg / "probe.py").write_text("def f(x):\n    return x\n")
    out = {pkg: subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                                "--no-incremental", f"spectui/{pkg}/probe.py"],
                               capture_output=True, text=True, cwd=tmp_path) for pkg in ("core", "ops")}
    assert out["core"].returncode == 1 and "no-untyped-def" in out["core"].stdout
    assert out["ops"].returncode == 0, out["ops"].stdout


def test_the_package_ships_its_type_marker() -> None:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert (ROOT / "spectui" / "py.typed").is_file() and "py.typed" in conf["spectui"]
