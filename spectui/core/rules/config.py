"""The configuration side of rule evaluation: requested flags (launch / resolution) vs effective values.

Effective values come from the log's `server_args=` line when there is one (what SGLang really ran with),
else from spectui's own resolution of the launch (what SGLang will run with).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spectui.core.log import prefer_server_args


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def crude_requested(args: tuple[str, ...] | list[str]) -> dict[str, object]:
    """dest -> value from `--flag value` / `--flag=value` / `--flag` when no catalogue is at hand."""
    out: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            dest = name.replace("-", "_")
            if eq:
                out[dest] = _number(value)
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                out[dest] = _number(args[i + 1])
                i += 1
            else:
                out[dest] = True
        i += 1
    return out


def resolve_launch(launch: Any, version: str | None, host_catalogue: Any = None) -> Any:
    """What SGLang `version` does with this launch, judged with its own catalogue when spectui ships it, else
    the host's own flags when given (`host_catalogue`: sources.hostflags_run), else the nearest one (None if
    it cannot tell)."""
    from spectui.core.launch import pick_version, resolve

    try:
        if host_catalogue is not None:
            return resolve(list(launch.sglang_args), version or host_catalogue.version, env=dict(launch.env),
                           entry=launch.entry, host_catalogue=host_catalogue)
        bundled, _warning = pick_version(version)
        return resolve(list(launch.sglang_args), version or bundled, env=dict(launch.env), entry=launch.entry)
    except Exception:  # a resolver failure must never hide the log's own evidence
        return None


class ConfigContext:
    """Looks up config names for rule expressions (see rule_schema.CONFIG_NAMES)."""

    def __init__(self, *, launch: Any = None, resolution: Any = None, version: str | None = None,
                 baseline_tps: float | None = None, host_catalogue: Any = None) -> None:
        self.version = version
        self.baseline_given = baseline_tps
        self.baseline_measured: float | None = None
        if resolution is None and launch is not None:
            resolution = resolve_launch(launch, version, host_catalogue)
        self.resolution = resolution
        self.launch_known = launch is not None or resolution is not None
        self.env: dict[str, str] = dict(getattr(launch, "env", ()) or ())
        # Flags SGLang does not know (vLLM's --num-speculative-tokens) only appear in the crude parse.
        requested = crude_requested(tuple(launch.sglang_args)) if launch is not None else {}
        requested.update(getattr(resolution, "requested", None) or {})
        self.requested: dict[str, object] = requested
        self.predicted: dict[str, object] = dict(getattr(resolution, "effective", None) or {})
        self.server_args: dict[str, object] | None = None
        self.target_arch: str | None = None
        self.draft_arch: str | None = None
        self.process_gone = False  # the server's process was seen to be gone (a probe's fact, not the log's)

    def set_server_args(self, args: Mapping[str, object]) -> None:
        """A `server_args=` line of this launch; of a parsed-values / resolved pair the resolved one wins."""
        self.server_args = dict(prefer_server_args(self.server_args, args))

    def clear_launch(self) -> None:
        """A new launch in the stream: its own server_args= line and weight loads will follow."""
        self.server_args = None
        self.target_arch = self.draft_arch = None

    def effective(self, dest: str) -> object:
        if self.server_args is not None:
            return self.server_args.get(dest)
        return self.predicted.get(dest)

    def in_effect(self, dest: str) -> object:
        value = self.effective(dest)
        return self.requested.get(dest) if value is None else value

    def value(self, name: str) -> Any:
        prefix, dot, rest = name.partition(".")
        if dot:
            if prefix == "requested":
                return self.requested.get(rest)
            if prefix == "effective":
                return self.effective(rest)
            if prefix == "env":
                return self.env.get(rest)
            return None
        if name in ("steps", "topk", "draft_tokens"):
            dest = {"steps": "speculative_num_steps", "topk": "speculative_eagle_topk",
                    "draft_tokens": "speculative_num_draft_tokens"}[name]
            value = self.in_effect(dest)
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if name == "ceiling":
            steps = self.value("steps")
            return steps + 1 if steps is not None else None
        if name == "algorithm":
            algo = self.in_effect("speculative_algorithm")
            return str(algo).upper() if algo else None
        if name == "max_running_requests":
            return self.in_effect("max_running_requests")
        if name == "version":
            return self.version
        if name == "process_gone":
            return self.process_gone
        if name == "launch_known":
            return self.launch_known
        if name == "baseline_tps":
            return self.baseline_given if self.baseline_given is not None else self.baseline_measured
        if name == "target_arch":
            return self.target_arch
        if name == "draft_arch":
            return self.draft_arch
        return self._resolution_value(name)

    def _resolution_value(self, name: str) -> Any:
        res = self.resolution
        if res is None:
            return None
        if name == "argparse_error":
            return getattr(res, "argparse_error", None)
        error = getattr(res, "error", None)
        if name == "resolve_error_type":
            return getattr(error, "type", None) if error is not None else None
        if name == "resolve_error":
            return getattr(error, "message", None) if error is not None else None
        if name == "resolve_warnings":
            warnings = getattr(res, "warnings", None)
            return "\n".join(warnings) if warnings else None
        return None
