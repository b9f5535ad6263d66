"""The traceback SGLang prints when argument resolution raises, shaped per release (docs/REFERENCE.md §2.2)."""

from __future__ import annotations

from spectui.sim.faults import SITE
from spectui.sim.logfmt import vtuple

# (major, minor, patch), function -> line of the raising statement, where docs/REFERENCE.md §2.2 names it.
_KNOWN_LINES: dict[tuple[tuple[int, int, int], str, str], int] = {
    ((0, 4, 10), "__post_init__", "AssertionError"): 523,
    ((0, 5, 2), "__post_init__", "AssertionError"): 757,
    ((0, 5, 4), "_handle_speculative_decoding", "AssertionError"): 1333,
    ((0, 5, 6), "_handle_speculative_decoding", "AssertionError"): 1725,
    ((0, 5, 6), "_handle_speculative_decoding", "TypeError"): 1753,
    ((0, 5, 10), "_handle_speculative_decoding", "AssertionError"): 3056,
    ((0, 5, 23), "_handle_eagle_family", "AssertionError"): 1162,
    ((0, 5, 23), "_handle_eagle_family", "TypeError"): 1274,
}

_SOURCE = {
    "AssertionError": "and {obj}.speculative_num_draft_tokens is None",
    "TypeError": "{obj}.speculative_eagle_topk > 1",
}


def _frame(path: str, line: int, func: str, src: str | None) -> list[str]:
    where = path if path.startswith("<") else f"{SITE}/{path}"
    out = [f'  File "{where}", line {line}, in {func}']
    if src:
        out.append(f"    {src}")
    return out


def resolution_traceback(version: str, exc_type: str, message: str, raised_at: str | None,
                         raised_line: str | None = None) -> list[str]:
    """Lines of the uncaught-exception traceback `python -m sglang.launch_server` prints (no prefixes)."""
    v = vtuple(version)
    hook_era = v >= (0, 5, 15)
    func = raised_at or ("_handle_eagle_family" if hook_era else "_handle_speculative_decoding")
    obj = "cfg" if hook_era else "self"
    src = raised_line or _SOURCE.get(exc_type if not message or exc_type != "ValueError" else "",
                                     "raise {exc}(").format(obj=obj, exc=exc_type)
    if exc_type == "AssertionError" and message:
        src = "assert ("
    owner, _, method = func.rpartition(".")  # "SpeculativeAlgorithm.from_string": tracebacks show the method
    if owner:
        func = method
    line = _KNOWN_LINES.get((v, func, exc_type), 1700 if not hook_era else 1160)
    lines = ["Traceback (most recent call last):",
             *_frame("<frozen runpy>", 198, "_run_module_as_main", None),
             *_frame("<frozen runpy>", 88, "_run_code", None)]
    if hook_era:
        lines += _frame("launch_server.py", 32, "<module>", "run_server(server_args)")
        lines += _frame("srt/entrypoints/http_server.py", 1873, "launch_server", "server_args.resolve_once()")
        lines += _frame("srt/server_args.py", 412, "resolve_once", "run_resolution_hooks(self)")
        lines += _frame("srt/arg_groups/hooks.py", 88, "run_resolution_hooks", "hook(cfg)")
        if owner:
            lines += _frame("srt/arg_groups/speculative_hook.py", 84, "handle_speculative_decoding",
                            f"{owner}.{func}(cfg.speculative_algorithm)")
            lines += _frame("srt/speculative/spec_info.py", 61, func, src)
        else:
            if func != "handle_speculative_decoding":
                lines += _frame("srt/arg_groups/speculative_hook.py", 96, "handle_speculative_decoding",
                                f"{func}(cfg)")
            lines += _frame("srt/arg_groups/speculative_hook.py", line, func, src)
    else:
        lines += _frame("launch_server.py", 11, "<module>", "server_args = prepare_server_args(sys.argv[1:])")
        lines += _frame("srt/server_args.py", line + 2200 if v >= (0, 5, 3) else line + 900, "prepare_server_args",
                        "return ServerArgs.from_cli_args(raw_args)")
        lines += _frame("srt/server_args.py", line + 2100 if v >= (0, 5, 3) else line + 850, "from_cli_args",
                        "return cls(**{attr: getattr(args, attr) for attr in attrs})")
        lines += _frame("<string>", 284, "__init__", None)
        if func != "__post_init__":
            lines += _frame("srt/server_args.py", 560, "__post_init__", f"self.{func}()")
        lines += _frame("srt/server_args.py", line, func, src)
    lines.append(f"{exc_type}: {message}" if message else exc_type)
    return lines
