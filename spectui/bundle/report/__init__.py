"""`render_report`: a GitHub-issue-ready Markdown text (under REPORT_CAP bytes) or the contract's JSON.

Every output is masked again here (a live target's launch command may hold an `--api-key`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from spectui.bundle.manifest import spectui_version
from spectui.bundle.masking import Masker
from spectui.bundle.reader import Bundle, read_bundle
from spectui.bundle.report.inputs import (
    ReportInput,
    fill_first_error,
    report_input_from_bundle,
    report_input_from_check,
)
from spectui.core.text import json_text, terminal_safe
from spectui.errors import UsageError

# The variables an issue's reader needs: what SGLang, PyTorch, CUDA/NCCL, the HF stack and torch.distributed
# read. The rest of the host's environment (site paths, container names, CA bundles) stays in the bundle.
RELEVANT_ENV = re.compile(
    r"^(SGL|SGLANG|CUDA|NCCL|NVSHMEM|NVIDIA|TORCH|PYTORCH|TORCHINDUCTOR|TRITON|FLASHINFER|HF|HUGGING_?FACE|"
    r"TRANSFORMERS|TOKENIZERS|OPENAI|OMP|MKL|GLOO|MASTER|SPECTUI_SIM)(_|$)|"
    r"^(LD_LIBRARY_PATH|PYTHONPATH|WORLD_SIZE|RANK|LOCAL_RANK)$")
REPORT_CAP = 60_000  # bytes; GitHub refuses issue bodies over 65,536 characters
JSON_KEYS = ("sglang_version", "launch", "requested", "effective", "differences", "diagnoses", "decode",
             "first_error", "excerpt")


@dataclass(frozen=True)
class _Limits:
    tb_lines: int
    excerpt_radius: int
    width: int
    evidence: int
    rows: int


_LEVELS = (_Limits(200, 20, 400, 8, 300), _Limits(80, 15, 300, 5, 150), _Limits(40, 10, 200, 3, 80),
           _Limits(20, 6, 160, 2, 40), _Limits(10, 3, 120, 1, 20))


def _norm(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip().lower()


def differences(inp: ReportInput) -> list[dict[str, Any]]:
    """Requested values SGLang changed: [{"field", "requested", "effective"}] in requested order."""
    if not inp.effective:
        return []
    return [{"field": k, "requested": v, "effective": inp.effective[k]} for k, v in inp.requested.items()
            if k in inp.effective and _norm(v) != _norm(inp.effective[k])]


def _excerpt(inp: ReportInput, radius: int, width: int) -> dict[str, Any] | None:
    lines = inp.log_lines
    if not lines:
        return None
    if inp.error_span:
        a, b = max(0, inp.error_span[0] - radius), min(len(lines), inp.error_span[0] + radius + 1)
    else:
        a, b = max(0, len(lines) - 2 * radius), len(lines)
    text = "\n".join(_clip(line, width) for line in lines[a:b])
    return {"first_line": inp.line_number(a), "last_line": inp.line_number(b - 1), "text": text}


def _plain(text: str) -> str:
    """Markdown for a terminal or an issue: every line through core.text's cleaner (log text is data:
    escape sequences and controls from a log never reach the reader's terminal)."""
    return "\n".join(terminal_safe(line, None) for line in text.split("\n"))


def _clip(line: str, width: int) -> str:
    return line if len(line) <= width else line[:width] + f" …[{len(line) - width} chars cut]"


def _traceback(text: str | None, limit: int, width: int) -> str | None:
    if not text:
        return text
    lines = text.splitlines()
    if len(lines) > limit:
        head, tail = limit // 2, limit - limit // 2
        lines = [*lines[:head], f"… [{len(lines) - limit} traceback lines cut to fit the report] …", *lines[-tail:]]
    return "\n".join(_clip(line, width) for line in lines)


def _fence(text: str, lang: str = "text") -> str:
    run, longest = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _cell(v: Any, width: int = 120) -> str:
    s = "null" if v is None else json.dumps(v) if isinstance(v, bool | dict | list) else str(v)
    return _clip(s, width).replace("|", "\\|").replace("\n", " ")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _fix_text(fix: Any) -> str | None:
    if isinstance(fix, str):
        return fix or None
    if not isinstance(fix, Mapping):
        return None
    parts = [f"`{k} {v}`" if v not in (None, "") else f"`{k}`" for k, v in (fix.get("set") or {}).items()]
    parts += [f"remove `{k}`" for k in fix.get("unset") or []]
    return ", ".join(parts) or None


def _relaunch_hint(target: str | None, fix: Any) -> str | None:
    if not isinstance(fix, Mapping) or not target or not (fix.get("set") or fix.get("unset")):
        return None
    words = [f"--set {k.lstrip('-')}={v}" for k, v in (fix.get("set") or {}).items()]
    words += [f"--unset {k.lstrip('-')}" for k in fix.get("unset") or []]
    return f"`spectui relaunch {target} {' '.join(words)}`"


def _fmt(x: Any, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _gpus(inp: ReportInput) -> str | None:
    if not inp.gpus:
        return None
    names: dict[Any, str] = {}
    used: dict[Any, float] = {}
    total: dict[Any, float] = {}
    for g in inp.gpus:
        idx = g.get("index", g.get("uuid", 0))
        names[idx] = str(g.get("name") or "GPU")
        if isinstance(g.get("memory_used_mib"), int | float):
            used[idx] = max(used.get(idx, 0.0), float(g["memory_used_mib"]))
        if isinstance(g.get("memory_total_mib"), int | float):
            total[idx] = float(g["memory_total_mib"])
    kinds: dict[str, int] = {}
    for name in names.values():
        kinds[name] = kinds.get(name, 0) + 1
    text = ", ".join(f"{n} × {name}" for name, n in kinds.items())
    if used:
        peak = max(used.values()) / 1024
        cap = f" of {max(total.values()) / 1024:.0f} GiB" if total else ""
        text += f" (peak {peak:.1f} GiB used{cap} on one GPU, {len(inp.gpus)} samples)"
    return text


def _decode_lines(inp: ReportInput) -> list[str]:
    d = inp.decode or {}
    out = []
    acc = d.get("accept_len") or {}
    tps = d.get("gen_tokens_per_s") or {}
    if d:
        out.append(f"- accept length: last {_fmt(acc.get('last'))} · mean {_fmt(acc.get('mean'))} · "
                   f"p10 {_fmt(acc.get('p10'))} · p90 {_fmt(acc.get('p90'))} ({d.get('samples', 0)} samples)")
        speed = f"- decode tok/s: last {_fmt(tps.get('last'), 1)} · mean {_fmt(tps.get('mean'), 1)}"
        mean = tps.get("mean")
        if isinstance(mean, int | float) and inp.baseline_tps and not (inp.bench or {}).get("speedup"):
            speed += f" — {mean / inp.baseline_tps:.2f}× baseline ({inp.baseline_tps:.1f} tok/s)"
        out.append(speed)
    b = inp.bench or {}
    if b.get("output_tokens_per_s") is not None:
        line = f"- bench: {_fmt(b.get('output_tokens_per_s'), 1)} output tok/s"
        sp = (b.get("speedup") or {}).get("output_tokens_per_s")
        if sp:
            base = (b.get("baseline") or {})
            line += f", {sp:.2f}× baseline {_fmt(base.get('output_tokens_per_s'), 1)} ({base.get('source')})"
        if (b.get("spec") or {}).get("accept_len") is not None:
            line += f", accept length {_fmt(b['spec']['accept_len'])}"
        out.append(line)
    return out or ["- no decode samples"]


def _markdown(inp: ReportInput, lim: _Limits) -> str:
    out: list[str] = []
    errs = [d for d in inp.diagnoses if d.get("severity") == "error"]
    head = errs[0].get("title") if errs else (inp.first_error or {}).get("kind") or "speculative decoding report"
    out.append(f"## spectui report: {_cell(head, 200)}\n")
    out += ["| | |", "|---|---|"]
    when = datetime.fromtimestamp(inp.created, UTC).strftime("%Y-%m-%d %H:%M UTC") if inp.created else None
    for key, value in (("SGLang", inp.sglang_version or "unknown"), ("spectui", inp.spectui_version),
                       ("hardware", _gpus(inp) or "unknown"), ("phase", inp.phase), ("target", inp.target),
                       ("source", f"{inp.source}" + (f", recorded {when}" if when else ""))):
        if value:
            out.append(f"| {key} | {_cell(value, 300)} |")
    out.append("\n### Launch command\n")
    if inp.launch and inp.launch.get("command"):
        out.append(_fence(_clip(str(inp.launch["command"]), 8 * lim.width), "sh"))
        env = inp.launch.get("env") or {}
        relevant = [(k, v) for k, v in env.items() if RELEVANT_ENV.match(k)]
        if env:
            shown = " ".join(f"`{k}={_clip(str(v), 80)}`" for k, v in relevant[: lim.rows]) or "nothing SGLang reads"
            rest = len(env) - min(len(relevant), lim.rows)
            more = f" (+{rest} other variable{'s' if rest != 1 else ''} in the bundle)" if rest else ""
            out.append(f"\nEnvironment: {shown}{more}")
    else:
        out.append("unknown")
    diffs = differences(inp)
    out.append("\n### Requested vs effective\n")
    if diffs:
        out += ["SGLang changed these (requested → effective):\n", "| flag | requested → effective |", "|---|---|"]
        out += [f"| `{_flag(d['field'])}` | {_cell(d['requested'])} → {_cell(d['effective'])} |" for d in diffs]
    elif inp.effective:
        out.append("SGLang kept every requested value.")
    else:
        out.append("Effective values unknown" + (f" (verdict: {_cell(inp.verdict)})" if inp.verdict else "") + ".")
    same = [k for k in inp.requested if k not in {d["field"] for d in diffs}]
    if same:
        rows = [f"| `{_flag(k)}` | {_cell(inp.requested[k])} | {_cell((inp.effective or {}).get(k, '?'))} |"
                for k in same[: lim.rows]]
        beyond = [f"\n… {len(same) - lim.rows} more"] if len(same) > lim.rows else []
        out += [f"\n<details><summary>{len(same)} other requested flags</summary>\n",
                "| flag | requested | effective |", "|---|---|---|", *rows, *beyond, "\n</details>"]
    out.append("\n### Diagnoses\n")
    for i, d in enumerate(inp.diagnoses[: lim.rows], 1):
        out.append(f"{i}. **[{d.get('severity', '?')}] {d.get('rule', '?')}** ({d.get('category', '?')}) — "
                   f"{_cell(d.get('title', ''), 300)}")
        for ev in (d.get("evidence") or [])[: lim.evidence]:
            out.append(f"   - `{_clip(str(ev), lim.width).replace('`', chr(39))}`")
        fix = _fix_text(d.get("fix"))
        if fix:
            hint = _relaunch_hint(inp.target, d.get("fix"))
            out.append(f"   - **Fix:** {fix}" + (f" — {hint}" if hint else ""))
    if len(inp.diagnoses) > lim.rows:
        out.append(f"\n… {len(inp.diagnoses) - lim.rows} more diagnoses")
    if not inp.diagnoses:
        out.append("none")
    out.append("\n### Speculative decoding\n")
    out += _decode_lines(inp)
    out.append("\n### First error\n")
    fe = inp.first_error
    if fe:
        where = f" at log line {fe['line']}" if fe.get("line") else ""
        out.append(f"`{fe.get('kind')}`{where}: {_cell(fe.get('summary') or '(no message)', 500)}\n")
        tb = _traceback(fe.get("traceback"), lim.tb_lines, lim.width)
        if tb:
            out.append(_fence(tb, "pytb"))
    else:
        out.append("none found")
    ex = _excerpt(inp, lim.excerpt_radius, lim.width)
    if ex:
        label = "around the first error" if inp.error_span else "end of the log"
        out += [f"\n<details><summary>Log excerpt, lines {ex['first_line']}–{ex['last_line']} ({label})</summary>\n",
                _fence(ex["text"]), "\n</details>"]
    notes = list(inp.notes)
    if inp.masked:
        notes.append("secrets masked: " + ", ".join(sorted(set(inp.masked))))
    out.append("\n<sub>Made by spectui " + (inp.spectui_version or spectui_version()) + ("; " + "; ".join(notes) if notes else "")
               + "</sub>\n")
    return "\n".join(out)


def _fit(text: str, cap: int) -> str:
    """Last resort: cut at a line boundary, closing an open code fence, and say so."""
    note = "\n\n_… report cut to fit GitHub's issue size limit; attach the bundle for the rest._\n"
    body = text.encode()[: cap - len(note.encode()) - 16].decode("utf-8", "ignore")
    body = body[: body.rfind("\n")] if "\n" in body else body
    fences = [ln for ln in body.splitlines() if ln.startswith("```")]
    if len(fences) % 2:
        opening = fences[-1]
        body += "\n" + opening[: len(opening) - len(opening.lstrip("`"))]
    return body + note


def _to_input(source: Any, **kwargs: Any) -> ReportInput:
    if isinstance(source, ReportInput):
        if source.first_error is None and source.log_lines:
            source = replace(source, notes=list(source.notes))
            fill_first_error(source)
        return source
    if isinstance(source, Bundle):
        return report_input_from_bundle(source)
    if isinstance(source, str | os.PathLike):
        return report_input_from_bundle(read_bundle(source))
    if isinstance(source, Mapping):
        return report_input_from_check(source, **kwargs)
    raise TypeError(f"render_report: cannot report on {type(source).__name__}")


def _masker(inp: ReportInput) -> Masker:
    m = Masker()
    if inp.launch:
        m.harvest_env(inp.launch.get("env") or {})
        m.harvest_command(inp.launch.get("command"))
    m.harvest_text("\n".join(inp.log_lines))
    return m


def render_report(source: Bundle | ReportInput | Mapping[str, Any] | str | os.PathLike[str], *,
                  format: str = "md", cap: int = REPORT_CAP, **check_kwargs: Any) -> str:
    """Markdown (`format="md"`) or JSON text. `source`: a Bundle, a bundle path, a ReportInput, or a
    `check --json` dict (then `flags=`, `launch=`, `log_text=`, `target=`, `bench=` may be given)."""
    inp = _to_input(source, **check_kwargs)
    masker = _masker(inp)
    if format == "json":
        lim = _LEVELS[0]
        fe = dict(inp.first_error) if inp.first_error else None
        if fe:
            fe["traceback"] = _traceback(fe.get("traceback"), lim.tb_lines, lim.width)
        obj = {"sglang_version": inp.sglang_version, "launch": inp.launch, "requested": inp.requested,
               "effective": inp.effective, "differences": differences(inp), "diagnoses": inp.diagnoses,
               "decode": inp.decode, "first_error": fe, "excerpt": _excerpt(inp, lim.excerpt_radius, lim.width)}
        return json_text(masker.scrub_json(obj), indent=2, default=str) + "\n"  # no raw escape or C1 reaches a pipe
    if format != "md":
        raise UsageError(f"unknown report format {format!r}: use md or json")
    text = ""
    for lim in _LEVELS:
        text = _plain(masker.scrub_text(_markdown(inp, lim)))
        if len(text.encode()) <= cap:
            return text
    return _fit(text, cap)
