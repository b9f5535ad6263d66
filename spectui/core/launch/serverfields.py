"""argparse dest -> SGLang ServerArgs field name, per release: the renames `ServerArgs.from_cli_args` does.

SGLang parses the command line into argparse dests, then `ServerArgs.from_cli_args` copies a few of them
to differently named fields (`args.tp_size = args.tensor_parallel_size`, ...) and builds ServerArgs from
the fields only. Everything a user sees after that — the `server_args=` log line, `/server_info`,
`/get_server_info`, the rules — uses the field names, so spectui's `requested` / `effective` /
`server_args` do too. Every other dest is already the field's own name (SGLang sets `dest=` explicitly
where a flag's spelling differs, e.g. `--fp8-gemm-backend` -> `fp8_gemm_runner_backend`).

Sources: `from_cli_args` in sgl-project/sglang python/sglang/srt/server_args.py of each line of releases,
checked against the bundled catalogues' dests (tests/core/test_serverfields.py keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spectui.core.versions import Version, v

_PARALLEL = {
    "tensor_parallel_size": "tp_size",  # --tensor-parallel-size / --tp-size
    "pipeline_parallel_size": "pp_size",  # --pipeline-parallel-size / --pp-size
    "data_parallel_size": "dp_size",  # --data-parallel-size / --dp-size
    "expert_parallel_size": "ep_size",  # --expert-parallel-size / --ep-size / --ep
}
_CONTEXT_MOE = {
    "attention_context_parallel_size": "attn_cp_size",  # --attention-context-parallel-size / --attn-cp-size
    "moe_data_parallel_size": "moe_dp_size",  # --moe-data-parallel-size / --moe-dp-size
}

# (first release, renames), ascending. A rename of a dest the release does not register is a no-op, so a
# row holds for every release up to the next row, including catalogues read from a host's `--help`.
#   0.4.10.post2, 0.5.2, 0.5.4.post3, 0.5.6.post2: tp, pp, dp, ep (catalogue dests tensor_parallel_size...)
#   0.5.9 (the first release with those flags), 0.5.10: also attn_cp_size and moe_dp_size (catalogue dests attention_context_parallel_size, ...)
#   0.5.23: flags are generated from the dataclass fields (`--tp-size` with alias `--tensor-parallel-size`,
#           dest tp_size): dest == field, nothing to rename; the old names are kept as inert renames so a
#           `--help`-built catalogue (dest from the first option string) still maps right.
FROM_CLI_ARGS: list[tuple[Version, Mapping[str, str]]] = [
    (v("0.4.0"), _PARALLEL),
    (v("0.5.9"), {**_PARALLEL, **_CONTEXT_MOE}),
]


def renames(version: Version) -> Mapping[str, str]:
    """dest -> ServerArgs field for the dests `from_cli_args` renames in `version`."""
    out: Mapping[str, str] = {}
    for first, table in FROM_CLI_ARGS:
        if version >= first:
            out = table
    return out


def field_name(dest: str, version: Version) -> str:
    """The ServerArgs field an argparse dest ends up in."""
    return renames(version).get(dest, dest)


def to_fields(values: Mapping[str, Any], version: Version) -> dict[str, Any]:
    """`values` keyed by ServerArgs field names, order kept."""
    table = renames(version)
    return {table.get(k, k): val for k, val in values.items()}


def dest_name(field: str, version: Version) -> str:
    """The argparse dest behind a ServerArgs field (the inverse of field_name)."""
    for dest, name in renames(version).items():
        if name == field:
            return dest
    return field
