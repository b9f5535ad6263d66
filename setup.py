"""Package discovery only (everything else is in pyproject.toml).

find_packages sees every package under spectui/, so a new sub-package is never missing from the wheel;
the rule library lives in the top-level rules/ folder (data, reviewed like code) and ships inside the
wheel as spectui.builtin_rules. pyproject.toml alone cannot say both: `packages.find` does not return a
package that `package-dir` maps to another folder.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["spectui", "spectui.*"]), "spectui.builtin_rules"],
    package_dir={"spectui.builtin_rules": "rules"},
)
