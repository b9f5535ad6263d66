"""A checkpoint directory as the inspector sees it: config.json, the weight index, tensor headers.

Paths are POSIX (the host is Linux). A Hugging Face hub id is resolved in the caller-given HF cache
(`models--org--name/snapshots/<rev>/`, `refs/<revision>`); nothing is ever downloaded.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from spectui.core.draft.reader import Reader, ReadError, read_small
from spectui.core.draft.st_header import HeaderError, SafetensorsHeader, TensorInfo, read_header
from spectui.core.limits import load_json

MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_INDEX_FILES = 4096  # shards an index may point to (the largest public checkpoints have a few hundred)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class CheckpointError(Exception):
    """The checkpoint cannot be read at all. `kind` is "missing" (no such path) or "config"."""

    def __init__(self, kind: str, message: str, evidence: list[str] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.evidence = evidence or []


@dataclass(frozen=True)
class TensorRef:
    file: str  # file name inside the checkpoint directory
    info: TensorInfo | None  # None when only the index names it (a .bin checkpoint, or header not read)


@dataclass
class Checkpoint:
    spec: str  # what the caller gave: a path or a hub id
    path: str  # the resolved directory
    source: str  # "local" or "hf-cache"
    config: dict[str, Any]
    files: list[str] = field(default_factory=list)  # weight files, as named in the directory
    weight_format: str = "none"  # "safetensors", "bin" or "none"
    tensors: dict[str, TensorRef] = field(default_factory=dict)
    index_file: str | None = None
    headers: dict[str, SafetensorsHeader] = field(default_factory=dict)  # by file name, when read
    problems: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (code, message, evidence)
    notes: list[str] = field(default_factory=list)

    def file_path(self, name: str) -> str:
        return posixpath.join(self.path, name)


def looks_like_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and not spec.startswith((".", "~"))


async def resolve(reader: Reader, spec: str, hf_cache: str | None, revision: str | None = None
                  ) -> tuple[str, str, list[str]]:
    """(directory, source, notes) for a path or hub id; raises CheckpointError("missing", ...)."""
    if await reader.listdir(spec) is not None:
        return spec, "local", []
    if await reader.size(spec) is not None:
        raise CheckpointError("config", f"{spec} is a file; SGLang wants the checkpoint directory",
                              [f"{spec}: regular file"])
    if not looks_like_hub_id(spec):
        raise CheckpointError("missing", f"{spec} does not exist on this host", [f"{spec}: no such file or directory"])
    if not hf_cache:
        raise CheckpointError("missing", f"{spec} is not a local directory and looks like a Hugging Face hub id, "
                              "but no HF cache location was given (HF_HOME / HUGGINGFACE_HUB_CACHE)",
                              [f"{spec}: no such directory"])
    org, name = spec.split("/", 1)
    tried: list[str] = []
    for base in dict.fromkeys([hf_cache, posixpath.join(hf_cache, "hub")]):
        repo = posixpath.join(base, f"models--{org}--{name}")
        tried.append(repo)
        snaps = await reader.listdir(posixpath.join(repo, "snapshots"))
        if snaps is None:
            continue
        ref = revision or "main"
        rev = await _read_ref(reader, posixpath.join(repo, "refs", ref))
        if rev is None and revision and revision in snaps:
            rev = revision  # a commit hash given as the revision
        if rev is not None and rev in snaps:
            return posixpath.join(repo, "snapshots", rev), "hf-cache", [f"{spec} resolved via refs/{ref} = {rev}"]
        if rev is None and len(snaps) == 1:
            return (posixpath.join(repo, "snapshots", snaps[0]), "hf-cache",
                    [f"{spec}: no refs/{ref} in the cache; using its only snapshot {snaps[0]}"])
        raise CheckpointError("missing", f"{spec} is in the HF cache but snapshot for {ref!r} is not "
                              f"(snapshots: {', '.join(snaps) or 'none'})", [f"{repo}/refs/{ref} = {rev!r}"])
    raise CheckpointError("missing", f"{spec} is not a directory on this host and not in the HF cache "
                          "(spectui never downloads; SGLang would download it at launch)",
                          [f"not found: {t}" for t in tried])


async def _read_ref(reader: Reader, path: str) -> str | None:
    try:
        text = (await read_small(reader, path, 4096)).decode("utf-8", "replace").strip()
    except (FileNotFoundError, ReadError):
        return None
    return text or None


async def read_json(reader: Reader, path: str, cap: int) -> Any:
    """Parsed JSON of a small file; CheckpointError("config") on anything but a clean parse."""
    try:
        raw = await read_small(reader, path, cap)
    except FileNotFoundError as exc:
        raise CheckpointError("config", f"no {posixpath.basename(path)}", [f"{path}: missing"]) from exc
    except ReadError as exc:
        raise CheckpointError("config", str(exc), [path]) from exc
    try:
        return load_json(raw.decode("utf-8"))  # depth-limited: a deeply nested file is one problem
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError("config", f"{posixpath.basename(path)} is not valid JSON: {exc}", [path]) from exc


async def load(reader: Reader, spec: str, *, hf_cache: str | None = None, revision: str | None = None,
               headers: bool = True) -> Checkpoint:
    """Resolve and read a checkpoint. Raises CheckpointError when it has no readable config.json.

    With headers=False only the index is read when there is one (used for targets with many shards);
    a single-file checkpoint's header is still read, since that is the only place its names are.
    """
    path, source, notes = await resolve(reader, spec, hf_cache, revision)
    config = await read_json(reader, posixpath.join(path, "config.json"), MAX_CONFIG_BYTES)
    if not isinstance(config, dict):
        raise CheckpointError("config", "config.json is not a JSON object", [f"{path}/config.json"])
    ckpt = Checkpoint(spec, path, source, config, notes=notes)
    names = await reader.listdir(path) or []
    await _load_weights(reader, ckpt, names, headers)
    return ckpt


async def _load_weights(reader: Reader, ckpt: Checkpoint, names: list[str], headers: bool) -> None:
    st_files = [n for n in names if n.endswith(".safetensors")]
    for index_name, fmt in (("model.safetensors.index.json", "safetensors"),
                            ("pytorch_model.bin.index.json", "bin")):
        if index_name in names:
            await _load_index(reader, ckpt, index_name, fmt)
            if fmt == "safetensors" and headers:
                await _load_headers(reader, ckpt, ckpt.files)
            return
    if st_files:
        ckpt.weight_format, ckpt.files = "safetensors", st_files
        await _load_headers(reader, ckpt, st_files)  # no index: the headers are the only list of names
        return
    bins = [n for n in names if n.endswith((".bin", ".pt", ".pth"))]
    if bins:
        ckpt.weight_format, ckpt.files = "bin", bins
        ckpt.notes.append("weights are pickled (.bin) without an index; tensor names are not inspected")


async def _load_index(reader: Reader, ckpt: Checkpoint, index_name: str, fmt: str) -> None:
    ckpt.index_file, ckpt.weight_format = index_name, fmt
    try:
        index = await read_json(reader, ckpt.file_path(index_name), MAX_INDEX_BYTES)
    except CheckpointError as exc:
        ckpt.problems.append(("index-unreadable", f"{index_name}: {exc}", exc.evidence))
        return
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        ckpt.problems.append(("index-unreadable", f"{index_name} has no weight_map object", [index_name]))
        return
    bad = sorted({str(f) for f in weight_map.values() if _unsafe_name(str(f))})
    if bad:
        ckpt.problems.append(("index-unreadable", f"{index_name} points outside the checkpoint directory",
                              [f"weight_map -> {b}" for b in bad[:3]]))
    for tensor, file in weight_map.items():
        if not _unsafe_name(str(file)):
            ckpt.tensors[str(tensor)] = TensorRef(str(file), None)
    files = sorted({ref.file for ref in ckpt.tensors.values()})
    if len(files) > MAX_INDEX_FILES:  # no real checkpoint has that many shards: their headers are not read
        ckpt.problems.append(("index-unreadable", f"{index_name} lists {len(files):,} weight files, more than "
                              f"the {MAX_INDEX_FILES:,} a checkpoint has; their headers were not read",
                              [f"weight_map -> {f}" for f in files[:3]]))
        files = []
    ckpt.files = files


def _unsafe_name(name: str) -> bool:
    return name.startswith("/") or ".." in name.split("/")


async def _load_headers(reader: Reader, ckpt: Checkpoint, files: list[str]) -> None:
    indexed = dict(ckpt.tensors)
    failed: set[str] = set()
    for name in files:
        path = ckpt.file_path(name)
        try:
            header = await read_header(reader, path)
        except FileNotFoundError:
            failed.add(name)
            ckpt.problems.append(("weights-file-missing", f"{name} is listed in {ckpt.index_file} but missing",
                                  [f"{ckpt.index_file} weight_map -> {name}", f"{path}: no such file"]))
            continue
        except (HeaderError, ReadError) as exc:
            failed.add(name)
            ckpt.problems.append(("weights-header", f"{name}: {exc}", [path]))
            continue
        ckpt.headers[name] = header
        for tensor, info in header.tensors.items():
            ckpt.tensors[tensor] = TensorRef(name, info)
    if indexed:
        absent = sorted(t for t, ref in indexed.items()
                        if ckpt.tensors[t].info is None and ref.file not in failed)
        if absent:
            ckpt.problems.append(("index-mismatch", f"{len(absent)} tensors in {ckpt.index_file} are not in "
                                  "the files it points to", [f"{t} -> {indexed[t].file}" for t in absent[:5]]))
