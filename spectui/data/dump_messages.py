"""Build the SGLang message catalogue (spectui/data/messages/) from release wheels.

Every error, assertion and warning text `sglang/srt` can print, read with Python's `ast` (nothing imported,
nothing run): `raise X("...")`, `assert cond, "..."`, `logger.warning/error/critical/exception(...)` (and
`warnings.warn`, `*_once` variants, any receiver named like a logger). f-strings, `%` and `.format`
templates keep their literal parts; each interpolated value becomes `{}` (literal braces are doubled), so
a pattern is the text with `{}` as `(.+?)`. Per text: the releases that print it, the module and function
(latest release), the exception class or log level, and the speculative-decoding part it belongs to.

    python3 spectui/data/dump_messages.py WHEEL_OR_DIR [...] [-o spectui/data/messages/sglang-messages.json.gz]

Wheels: `pip download --no-deps sglang==X -d DIR`. Standard library only; Python 3.9+.
Output (gzip JSON): {"format": 1, "releases": [...], "modules": [...], "functions": [...], "messages":
[[kind, level, text, module_index, function_index, releases_bitmask, subsystem, spec], ...]}; a message's
id is "M" + the first 9 hex digits of sha1("kind\0level\0text") (stable across rebuilds).
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

LOG_METHODS = {"warning", "warn", "error", "critical", "exception", "fatal", "warning_once", "error_once",
               "warning_rank0", "error_rank0"}
MIN_LITERAL = 8  # a text with fewer literal characters than this says nothing on its own
_VERSION_RE = re.compile(r"^sglang-(?P<v>[0-9][^-]*)-")


def release_key(version: str) -> tuple:
    parts = re.split(r"[.]", version)
    out = []
    for p in parts:
        m = re.match(r"(post|rc|dev)?(\d+)", p)
        if m and m.group(1) == "post":
            out.append((1, int(m.group(2))))
        elif m and m.group(1) in ("rc", "dev"):
            out.append((-1, int(m.group(2))))
        elif m:
            out.append((0, int(m.group(2))))
    return tuple(out)


# -- text templates -----------------------------------------------------------------------------------

def _lit(s: str) -> str:
    return s.replace("{", "{{").replace("}", "}}")


def _percent(fmt: str) -> str:
    out = re.split(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?[diouxXeEfFgGcrsa%]", fmt)
    specs = re.findall(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?([diouxXeEfFgGcrsa%])", fmt)
    text = _lit(out[0])
    for i, rest in enumerate(out[1:]):  # (zip(strict=) needs 3.10; this runs on the host's own Python)
        text += ("%" if specs[i] == "%" else "{}") + _lit(rest)
    return text


def _brace_format(fmt: str) -> str:
    out, i = [], 0
    while i < len(fmt):
        c = fmt[i]
        if c == "{" and fmt[i:i + 2] == "{{":
            out.append("{{")
            i += 2
        elif c == "}" and fmt[i:i + 2] == "}}":
            out.append("}}")
            i += 2
        elif c == "{":
            j = fmt.find("}", i)
            if j < 0:
                out.append("{{")
                i += 1
            else:
                out.append("{}")
                i = j + 1
        else:
            out.append(_lit(c))
            i += 1
    return "".join(out)


def template(node: ast.AST | None, names: dict[str, str] | None = None) -> str | None:
    """The text a message expression prints, `{}` for each interpolated value; None when no literal at all.
    `names`: the function's local string variables (`msg = "..."; msg += f"..."; raise X(msg)`)."""
    if node is None:
        return None
    if isinstance(node, ast.Name) and names and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _lit(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(_lit(value.value))
            else:
                parts.append("{}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left, names), template(node.right, names)
        if left is None and right is None:
            return None
        return (left if left is not None else "{}") + (right if right is not None else "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return _percent(node.left.value)
        return template(node.left, names)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
        return _brace_format(node.func.value.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return None
    return None


def literal_chars(text: str) -> int:
    return len(text.replace("{{", "{").replace("}}", "}").replace("{}", "").strip())


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _receiver(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        v = func.value
        if isinstance(v, ast.Name):
            return v.id
        if isinstance(v, ast.Attribute):
            return v.attr
        if isinstance(v, ast.Call):
            return _call_name(v.func)
    return ""


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scope: list[str] = []
        self.names: list[dict[str, str]] = [{}]  # per function: local variables holding message text
        self.found: list[tuple[str, str, str, str, int]] = []  # kind, level, text, function, line

    def _scoped(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.names.append({})
        self._scoped(node, node.name)
        self.names.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = template(node.value, self.names[-1])
            if text is not None:
                self.names[-1][node.targets[0].id] = text
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Name) and isinstance(node.op, ast.Add) and target.id in self.names[-1]:
            more = template(node.value, self.names[-1])
            self.names[-1][target.id] += more if more is not None else "{}"
        self.generic_visit(node)

    def _add(self, kind: str, level: str, node: ast.AST | None, line: int, lazy_args: bool = False) -> None:
        if lazy_args and isinstance(node, ast.Constant) and isinstance(node.value, str):
            text: str | None = _percent(node.value)  # logger.warning("... %d ...", n): logging formats it
        else:
            text = template(node, self.names[-1])
        if text is None or literal_chars(text) < MIN_LITERAL:
            return
        self.found.append((kind, level, " ".join(text.split()), ".".join(self.scope) or "<module>", line))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            self._add("raise", _call_name(exc.func) or "Exception", exc.args[0], node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self._add("assert", "AssertionError", node.msg, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node.func)
        if node.args and name in LOG_METHODS and "log" in _receiver(node.func).lower():
            level = {"warn": "warning", "fatal": "critical", "exception": "error"}.get(name, name)
            self._add("log", level.split("_")[0], node.args[0], node.lineno, lazy_args=len(node.args) > 1)
        elif node.args and name == "warn" and _receiver(node.func) == "warnings":
            self._add("log", "warning", node.args[0], node.lineno)
        self.generic_visit(node)


def scan_source(source: str) -> list[tuple[str, str, str, str, int]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    v = _Visitor()
    v.visit(tree)
    return v.found


# -- speculative-decoding part and subsystem -------------------------------------------------------------

_SPEC_FILE = [("dflash", "dflash"), ("dspark", "dspark"), ("ngram", "ngram"), ("standalone", "standalone"),
              ("multi_layer_eagle", "multi-layer-eagle"), ("frozen_kv_mtp", "mtp"), ("eagle", "eagle"),
              ("uno", "uno")]
_SPEC_TEXT = re.compile(r"(?i)specul|draft|eagle|ngram|nextn|\bmtp\b|dflash|standalone|accept")
_SUBSYSTEM = [  # module path -> subsystem (the ids of rules/_frames.toml, plus a few start-up ones)
    ("sglang/srt/speculative/", "draft_worker"), ("sglang/srt/disaggregation/", "pd_transfer"),
    ("sglang/srt/distributed/", "distributed"), ("sglang/srt/model_loader/", "weight_loading"),
    ("sglang/srt/mem_cache/", "memory_pool"), ("pool_configurator", "memory_pool"),
    ("graph_runner", "cuda_graph"), ("cuda_graph", "cuda_graph"), ("sglang/srt/compilation/", "torch_compile"),
    ("sglang/srt/server_args.py", "server_args"), ("sglang/srt/arg_groups/", "server_args"),
    ("sglang/srt/layers/attention/", "attention"), ("sglang/srt/models/", "model"),
    ("sglang/srt/managers/", "scheduler"), ("sglang/srt/entrypoints/", "http_server"),
]


def spec_part(module: str, func: str, text: str) -> str:
    """The speculative-decoding part a message belongs to ("eagle", "ngram", ..., "spec"), or "" if none."""
    if "sglang/srt/speculative/" in module:
        name = module.rsplit("/", 1)[-1]
        for key, part in _SPEC_FILE:
            if key in name:
                return part
        return "spec"
    if _SPEC_TEXT.search(text) or "specul" in func.lower() or "draft" in func.lower():
        return "spec"
    return ""


def subsystem(module: str, func: str) -> str:
    lowered = func.lower()
    if "model_runner" in module or "model_executor" in module:
        if "memory_pool" in lowered or "max_num_token" in lowered:
            return "memory_pool"
        if "graph" in lowered:
            return "cuda_graph"
        if "load" in lowered and "weight" in lowered or lowered.endswith("load_model"):
            return "weight_loading"
        if "distributed" in lowered:
            return "distributed"
    for key, name in _SUBSYSTEM:
        if key in module:
            return name
    return ""


# -- catalogue ------------------------------------------------------------------------------------------

def message_id(kind: str, level: str, text: str) -> str:
    return "M" + hashlib.sha1(f"{kind}\0{level}\0{text}".encode()).hexdigest()[:9]


def wheel_version(path: Path, z: zipfile.ZipFile) -> str:
    m = _VERSION_RE.match(path.name)
    if m:
        return m.group("v")
    for name in z.namelist():
        if name.endswith("sglang/version.py"):
            vm = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", z.read(name).decode())
            if vm:
                return vm.group(1)
    raise SystemExit(f"{path}: cannot tell the SGLang release")


def scan_wheel(path: Path) -> tuple[str, dict[tuple[str, str, str], tuple[str, str, int]]]:
    with zipfile.ZipFile(path) as z:
        version = wheel_version(path, z)
        found: dict[tuple[str, str, str], tuple[str, str, int]] = {}
        for name in sorted(z.namelist()):
            if not (name.startswith("sglang/srt/") and name.endswith(".py")):
                continue
            source = z.read(name).decode("utf-8", errors="replace")
            for kind, level, text, func, line in scan_source(source):
                found.setdefault((kind, level, text), (name, func, line))
    return version, found


def build(wheels: list[Path]) -> dict:
    scans = sorted((scan_wheel(p) for p in wheels), key=lambda t: release_key(t[0]))
    releases = [v for v, _ in scans]
    if len(set(releases)) != len(releases):
        raise SystemExit("the same release given twice")
    entries: dict[tuple[str, str, str], list] = {}
    for bit, (_, found) in enumerate(scans):
        for key, where in found.items():
            entry = entries.setdefault(key, [0, where])
            entry[0] |= 1 << bit
            entry[1] = where  # the latest release's module, function and line
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    rows = []
    for (kind, level, text), (mask, (module, func, line)) in sorted(entries.items(), key=lambda kv: (kv[1][1][0], kv[0][2])):
        mi = modules.setdefault(module, len(modules))
        fi = functions.setdefault(func, len(functions))
        del line  # the latest release's line number: left out to keep the file small
        rows.append([kind, level, text, mi, fi, mask, subsystem(module, func), spec_part(module, func, text)])
    return {"format": 1, "releases": releases, "modules": list(modules), "functions": list(functions),
            "messages": rows,
            "note": "built by spectui/data/dump_messages.py from the sglang wheels on PyPI; text: literal parts "
                    "with {} for each interpolated value ({{ }} = literal braces)"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("inputs", nargs="+", help="sglang wheel files, or directories holding them")
    ap.add_argument("-o", "--output", default=str(Path(__file__).parent / "messages" / "sglang-messages.json.gz"))
    args = ap.parse_args(argv)
    wheels: list[Path] = []
    for item in map(Path, args.inputs):
        if item.is_dir():
            wheels += sorted(item.glob("sglang-*.whl"))
        elif item.is_file():
            wheels.append(item)
        else:
            print(f"dump_messages: {item}: no such file or directory", file=sys.stderr)
            return 2
    if not wheels:
        print("dump_messages: no sglang wheels given", file=sys.stderr)
        return 2
    data = build(wheels)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as f:
        f.write(raw)
    print(f"{out}: {len(data['messages'])} messages from {len(data['releases'])} releases "
          f"({', '.join(data['releases'])}), {out.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
