"""Layer rules: core stays pure and the import-linter contracts hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_core_imports_no_ui_or_network_libraries() -> None:
    code = (
        "import sys, importlib, pkgutil, spectui.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'spectui.core.'):\n"
        "    importlib.import_module(m.name)\n"
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


def _import_cycles(package: str = "spectui") -> list[list[str]]:
    """Strongly connected groups of spectui modules (every import counts: lazy and TYPE_CHECKING ones too)."""
    graph = grimp.build_graph(package, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles_inside_spectui() -> None:
    assert _import_cycles() == []


def test_cycle_finder_sees_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from cyclepkg import b\n")
    (pkg / "b.py").write_text("from cyclepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _import_cycles("cyclepkg") == [["cyclepkg.a", "cyclepkg.b"]]


MAX_MODULE_LINES = 420  # "no module over ~400 lines"


def test_no_module_is_over_about_400_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "spectui").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


CORE_PACKAGES = ("log", "launch", "rules", "specdec", "draft")


def test_callers_import_a_core_package_through_its_init() -> None:
    """Outside spectui/core/<pkg>/, names come from `spectui.core.<pkg>` (its __init__ names the public
    pieces), not from its modules; importing a module object itself (`from … import engine as rules`) is
    still allowed."""
    import ast

    offenders = []
    for path in [*(ROOT / "spectui").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        rel = path.relative_to(ROOT).with_suffix("")
        mod = ".".join(rel.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            for pkg in CORE_PACKAGES:
                prefix = f"spectui.core.{pkg}."
                if node.module.startswith(prefix) and not mod.startswith(f"spectui.core.{pkg}"):
                    folder = ROOT / node.module.replace(".", "/")
                    names = [a.name for a in node.names if not (folder / f"{a.name}.py").exists()]
                    if any(not n.startswith("_") for n in names):
                        offenders.append(f"{rel}: from {node.module} import {', '.join(names)}")
    assert offenders == []
