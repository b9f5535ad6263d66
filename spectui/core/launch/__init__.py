"""The launch command and what SGLang makes of it: shell words -> LaunchCommand, each release's argparse
catalogue, the resolver (SGLang's own resolution rules, release by release) and its explanations.

Callers outside this package import these names from here.
"""

from spectui.core.launch.argv import flag_value, resolvable_args, takes_as_value
from spectui.core.launch.catalogue import (  # noqa: E402
    ArgparseFailure,
    CataloguePick,
    FlagCatalogue,
    known_versions,
    load_catalogue,
    pick_catalogue,
    pick_version,
)
from spectui.core.launch.command import (  # noqa: E402
    FlagChange,
    LaunchCommand,
    diff,
    flag_values,
    parse_command,
    set_flag,
    sim_knob_len,
    unset_flag,
)
from spectui.core.launch.explain import error_fix  # noqa: E402
from spectui.core.launch.helpcatalogue import catalogue_from_help  # noqa: E402
from spectui.core.launch.hostflags import (  # noqa: E402
    HostFlagsError,
    cached_catalogue,
    catalogue_for_host,
    dump_script,
    needs_host,
    parse_dump,
    read_host_catalogue,
)
from spectui.core.launch.hostresolve import HostResolveError, is_source_build  # noqa: E402
from spectui.core.launch.hostresolve import judge as judge_by_host  # noqa: E402
from spectui.core.launch.hostresolve import parse as parse_host_resolution  # noqa: E402
from spectui.core.launch.hostresolve import script as host_resolution_script  # noqa: E402
from spectui.core.launch.notes import FlagNote
from spectui.core.launch.pasted import ASSUMED_NOTE, parse_pasted  # noqa: E402
from spectui.core.launch.resolve import (
    SPEC_VIEW,  # noqa: E402
    Resolution,
    ResolveError,
    resolve,
)
from spectui.core.launch.serverfields import dest_name, field_name, to_fields  # noqa: E402

__all__ = [
    "HostResolveError",
    "host_resolution_script",
    "is_source_build",
    "judge_by_host",
    "parse_host_resolution",
    "ASSUMED_NOTE",
    "ArgparseFailure",
    "CataloguePick",
    "FlagCatalogue",
    "FlagChange",
    "FlagNote",
    "HostFlagsError",
    "LaunchCommand",
    "Resolution",
    "ResolveError",
    "SPEC_VIEW",
    "cached_catalogue",
    "catalogue_for_host",
    "catalogue_from_help",
    "dest_name",
    "diff",
    "dump_script",
    "error_fix",
    "field_name",
    "flag_value",
    "flag_values",
    "known_versions",
    "load_catalogue",
    "needs_host",
    "parse_command",
    "parse_dump",
    "parse_pasted",
    "pick_catalogue",
    "pick_version",
    "read_host_catalogue",
    "resolvable_args",
    "resolve",
    "set_flag",
    "sim_knob_len",
    "takes_as_value",
    "to_fields",
    "unset_flag",
]
