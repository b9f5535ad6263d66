"""`inspect`: read a draft (and its target) through a Reader and report findings, contract-shaped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spectui.core.draft.checkpoint import Checkpoint, CheckpointError, load
from spectui.core.draft.checks_fit import check_aux_layers, check_context, check_dtype_rope, check_hidden_size
from spectui.core.draft.checks_load import (
    check_algorithm,
    check_architecture,
    check_config_types,
    check_format,
    check_layout,
    check_read_problems,
    check_weights,
)
from spectui.core.draft.checks_vocab import check_mtp, check_vocab
from spectui.core.draft.context import Context, Launch
from spectui.core.draft.findings import Finding
from spectui.core.draft.formats import (
    MTP_TARGETS,
    FormatInfo,
    Layout,
    arch_of,
    aux_layer_ids,
    cfg,
    key_layout,
    mtp_layers,
    recognise,
)
from spectui.core.draft.reader import Reader, ReadError
from spectui.core.draft.releases import eagle3_loader
from spectui.core.draft.st_header import HeaderError, read_int_tensor

_ORDER = {"error": 0, "warning": 1, "info": 2}
CHECKS: tuple[Callable[[Context], list[Finding]], ...] = (
    check_read_problems, check_config_types, check_architecture, check_format, check_algorithm, check_layout, check_weights,
    check_hidden_size, check_vocab, check_aux_layers, check_mtp, check_context, check_dtype_rope,
)


@dataclass
class Inspection:
    draft: dict[str, Any] | None
    target: dict[str, Any] | None
    findings: list[Finding] = field(default_factory=list)
    launch: dict[str, Any] = field(default_factory=dict)

    @property
    def has_error(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    @property
    def exit_code(self) -> int:
        """The contract's: 1 when a finding has severity error, else 0."""
        return 1 if self.has_error else 0

    def to_json(self) -> dict[str, Any]:
        return {"draft": self.draft, "target": self.target, "launch": self.launch,
                "findings": [f.to_json() for f in self.findings]}


async def inspect(reader: Reader, *, draft: str | None, model: str | None = None, algorithm: str | None = None,
                  steps: int | None = None, topk: int | None = None, draft_tokens: int | None = None,
                  sglang_version: str | None = None, hf_cache: str | None = None,
                  max_prompt_len: int | None = None, draft_revision: str | None = None,
                  model_revision: str | None = None) -> Inspection:
    """Inspect the draft checkpoint `draft` (a directory or hub id) against the target `model`.

    `hf_cache` is the server's HF_HOME or HUGGINGFACE_HUB_CACHE (both layouts are tried); hub ids are
    resolved there and never downloaded. Only headers are read, plus d2t/t2d values (capped).
    """
    launch = Launch(algorithm.upper() if algorithm else None, steps, topk, draft_tokens, max_prompt_len)
    launch_json = {"algorithm": launch.algorithm, "steps": steps, "topk": topk, "draft_tokens": draft_tokens,
                   "sglang_version": sglang_version, "max_prompt_len": max_prompt_len}
    findings: list[Finding] = []
    b0 = reader.bytes_read
    target: Checkpoint | None = None
    target_json: dict[str, Any] | None = None
    if model:
        try:
            target = await load(reader, model, hf_cache=hf_cache, revision=model_revision, headers=False)
        except (CheckpointError, ReadError) as exc:
            target_json = {"path": model, "error": str(exc)}
            findings.append(Finding("target-unreadable", "draft-config", "info",
                                    f"Target checkpoint not read ({exc}); comparisons with the target skipped",
                                    getattr(exc, "evidence", []) or [model],
                                    "give the target's path (or its HF cache) to compare the draft with it"))
    b1 = reader.bytes_read
    if target is not None:
        target_json = _target_json(target, b1 - b0)

    target_is_mtp = target is not None and (mtp_layers(target.config) > 0 or bool(
        set(arch_of(target.config)) & MTP_TARGETS))
    ckpt: Checkpoint | None
    if draft is None or (target is not None and draft == model and target_is_mtp):
        if target_is_mtp:
            ckpt = target
        else:
            findings += _no_draft(launch, target)
            return Inspection(None, target_json, _sorted(findings), launch_json)
    else:
        try:
            ckpt = await load(reader, draft, hf_cache=hf_cache, revision=draft_revision)
        except (CheckpointError, ReadError) as exc:
            findings.append(_unreadable(draft, exc))
            return Inspection({"path": draft, "format": None, "error": str(exc),
                               "bytes_read": reader.bytes_read - b1}, target_json, _sorted(findings), launch_json)
    assert ckpt is not None
    layout = key_layout(ckpt.tensors)
    fmt = recognise(ckpt.config, layout)
    if ckpt is target and fmt.format != "mtp":
        fmt = FormatInfo("mtp", fmt.declared, "config", why=("the draft is the target's own MTP layers",))
    ctx = Context(ckpt, target, fmt, layout, eagle3_loader(sglang_version), launch)
    if fmt.format == "sglang-eagle3":
        await _read_maps(reader, ctx)
    for check in CHECKS:
        try:
            findings += check(ctx)
        except Exception as exc:  # a check must not turn odd input into a traceback; tests assert none fires
            findings.append(Finding("internal-check-error", "draft-config", "warning",
                                    f"spectui could not run {check.__name__}: {exc.__class__.__name__}: {exc}",
                                    [], "please report this with the draft's config.json"))
    for note in ctx.tensor_notes:
        findings.append(Finding("vocab-map-unread", "draft-vocab-map", "info", note, [], "none"))
    used = reader.bytes_read - b1 if ckpt is not target else (target_json or {}).get("bytes_read", 0)
    return Inspection(_draft_json(ckpt, fmt, layout, used), target_json, _sorted(findings), launch_json)


async def _read_maps(reader: Reader, ctx: Context) -> None:
    assert ctx.draft is not None
    for name in ("d2t", "t2d"):
        ref = ctx.layout.names.get(name)
        header = ctx.draft.headers.get(ref.file) if ref else None
        if ref is None or header is None:
            continue
        try:
            values = await read_int_tensor(reader, header, ctx.layout.original[name])
        except (HeaderError, ReadError) as exc:
            ctx.tensor_notes.append(f"{name} values not checked: {exc}")
            continue
        setattr(ctx, name, values)


def _no_draft(launch: Launch, target: Checkpoint | None) -> list[Finding]:
    fam = launch.eagle_family
    if fam in ("EAGLE", "EAGLE3"):
        arch = arch_of(target.config) if target else []
        return [Finding("draft-none", "draft-missing", "error",
                        f"{launch.algorithm} without --speculative-draft-model-path and the target has no MTP "
                        "layers: SGLang loads the target itself as the draft, and nothing checks it (inferred)",
                        [f"launch --speculative-algorithm {launch.algorithm}", "no --speculative-draft-model-path"]
                        + ([f"target config.json architectures = {arch}"] if arch else []),
                        "add --speculative-draft-model-path with a draft trained for this target")]
    return [Finding("draft-none", "draft-missing", "info", "No draft checkpoint to inspect", [],
                    "give the draft path (--draft) or the launch command")]


def _unreadable(spec: str, exc: Exception) -> Finding:
    kind = getattr(exc, "kind", "config")
    evidence = list(getattr(exc, "evidence", [])) or [spec]
    if kind == "missing":
        return Finding("draft-path-missing", "draft-missing", "error", f"Draft not found: {exc}", evidence,
                       "check --speculative-draft-model-path on the server host (and its HF cache)")
    return Finding("draft-config-unreadable", "draft-config", "error", f"Draft checkpoint unreadable: {exc}",
                   evidence, "the draft directory needs a valid config.json next to its weights")


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def _num(config: dict[str, Any], key: str) -> Any:
    v = cfg(config, key)
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _draft_json(ckpt: Checkpoint, fmt: FormatInfo, layout: Layout, bytes_read: int) -> dict[str, Any]:
    c = ckpt.config
    ids, ids_from = aux_layer_ids(c)
    dtypes = Counter(r.info.dtype for r in ckpt.tensors.values() if r.info is not None)
    declared = sum(h.data_bytes for h in ckpt.headers.values())
    num_layers = mtp_layers(c) if fmt.format == "mtp" else _num(c, "num_hidden_layers")
    return {
        "path": ckpt.spec, "resolved_path": ckpt.path, "source": ckpt.source, "format": fmt.format,
        "format_from": fmt.source, "architectures": arch_of(c), "hidden_size": _num(c, "hidden_size"),
        "num_layers": num_layers, "vocab_size": _num(c, "vocab_size"),
        "draft_vocab_size": _num(c, "draft_vocab_size"),
        "max_position_embeddings": _num(c, "max_position_embeddings"),
        "aux_layer_ids": ids, "aux_layer_ids_from": ids_from, "target_hidden_size": _num(c, "target_hidden_size"),
        "key_layout": layout.style, "weight_format": ckpt.weight_format, "files": list(ckpt.files),
        "tensors": len(ckpt.tensors), "tensor_bytes": declared, "dtypes": dict(dtypes),
        "notes": list(ckpt.notes), "bytes_read": bytes_read,
    }


def _target_json(t: Checkpoint, bytes_read: int) -> dict[str, Any]:
    c = t.config
    return {
        "path": t.spec, "resolved_path": t.path, "architectures": arch_of(c), "hidden_size": _num(c, "hidden_size"),
        "num_layers": _num(c, "num_hidden_layers"), "vocab_size": _num(c, "vocab_size"),
        "max_position_embeddings": _num(c, "max_position_embeddings"), "mtp_layers": mtp_layers(c),
        "bytes_read": bytes_read,
    }
