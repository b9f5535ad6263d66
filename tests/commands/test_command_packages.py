"""Every subcommand's module keeps a callable `run` even with all its package's submodules imported: a
submodule named `run` replaces the function on the package (seen: `commands/watch/run.py` turned
`spectui watch` into "TypeError: 'module' object is not callable" once anything had imported it)."""

from __future__ import annotations

import importlib
import pkgutil

from spectui import cli


def test_every_command_run_is_a_function_with_its_package_imported() -> None:
    for name, (module_name, _help) in cli.COMMANDS.items():
        module = importlib.import_module(module_name)
        for sub in pkgutil.iter_modules(getattr(module, "__path__", [])):
            importlib.import_module(f"{module_name}.{sub.name}")
        assert callable(module.run) and not isinstance(module.run, type(module)), name
        assert callable(module.add_arguments), name
