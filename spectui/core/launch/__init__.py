"""The launch command and what SGLang makes of it: shell words -> LaunchCommand, each release's argparse
catalogue, the resolver (SGLang's own resolution rules, release by release) and its explanations.

Callers outside this package import these names from here.
"""

from spectui.core.launch.catalogue import FlagCatalogue, known_versions, load_catalogue, pick_version
from spectui.core.launch.command import FlagChange, LaunchCommand, parse_command
from spectui.core.launch.notes import FlagNote
from spectui.core.launch.resolve import Resolution, ResolveError, resolve

__all__ = [
    "FlagCatalogue", "FlagChange", "FlagNote", "LaunchCommand", "Resolution", "ResolveError", "known_versions",
    "load_catalogue", "parse_command", "pick_version", "resolve",
]
