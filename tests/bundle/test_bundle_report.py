"""render_report: a GitHub-issue Markdown text under the cap, and the contract's JSON keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bundle_leaky import SECRETS, leaky_parts

from spectui.bundle import (
    REPORT_CAP,
    ReportInput,
    read_bundle,
    render_report,
    report_input_from_bundle,
    write_bundle,
)

CONTRACT_KEYS = {"sglang_version", "launch", "requested", "effective", "differences", "diagnoses", "decode",
                 "first_error", "excerpt"}
SPEC003 = {
    "rule": "SPEC003", "category": "silent-override", "severity": "error",
    "title": "speculative_num_draft_tokens is silently overridden",
    "evidence": ["line 17: speculative_num_draft_tokens is adjusted to speculative_num_steps + 1"],
    "fix": {"set": {"--speculative-num-steps": "15"}, "unset": []},
}


def _silent_override() -> ReportInput:
    return ReportInput(
        sglang_version="0.5.4",
        target="gpu-box",
        launch={"command": "python -m sglang.launch_server --speculative-num-draft-tokens 16", "env": {}},
        requested={"speculative_eagle_topk": 1, "speculative_num_steps": 1, "speculative_num_draft_tokens": 16},
        effective={"speculative_eagle_topk": 1, "speculative_num_steps": 1, "speculative_num_draft_tokens": 2},
        diagnoses=[SPEC003],
    )


def test_silent_override_names_the_override_and_its_fix() -> None:
    md = render_report(_silent_override())
    diff_section = md[md.index("### Requested vs effective") : md.index("### Diagnoses")]
    assert re.search(r"`--speculative-num-draft-tokens` \| 16 → 2 \|", diff_section)
    assert diff_section.index("16 → 2") < diff_section.index("other requested flags")  # differences first
    assert "SPEC003" in md and "**Fix:** `--speculative-num-steps 15`" in md
    assert "spectui relaunch gpu-box --set speculative-num-steps=15" in md
    data = json.loads(render_report(_silent_override(), format="json"))
    assert data["differences"] == [{"field": "speculative_num_draft_tokens", "requested": 16, "effective": 2}]


def test_silent_override_from_a_check_dict_and_flags() -> None:
    check = {"sglang_version_guess": "0.5.4", "phase": "serving", "diagnoses": [SPEC003], "errors": [],
             "decode": {"samples": 2, "accept_len": {"last": 1.0, "mean": 1.0, "p10": 1.0, "p90": 1.0},
                        "gen_tokens_per_s": {"last": 40.0, "mean": 41.0}}}
    flags = {"sglang_version": "0.5.4", "requested": {"speculative_num_draft_tokens": "16"},
             "effective": {"speculative_num_draft_tokens": 2}, "outcome": "ok"}
    md = render_report(check, flags=flags, target="h")
    assert "16 → 2" in md and "`--speculative-num-steps 15`" in md and "mean 1.00" in md


def test_report_from_a_bundle(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    write_bundle(path, leaky_parts())
    bundle = read_bundle(path)
    md = render_report(bundle)
    assert "| SGLang | 0.5.4 |" in md and "2 × NVIDIA H100 80GB HBM3" in md
    assert "--api-key '***'" in md and "`OPENAI_API_KEY=***` `TOKENIZERS_PARALLELISM=false`" in md
    # only what SGLang and its stack read; the host's other variables stay in the bundle
    (env_line,) = [ln for ln in md.splitlines() if ln.startswith("Environment: ")]
    assert env_line.endswith("`CUDA_VISIBLE_DEVICES=0` (+2 other variables in the bundle)")
    assert "MY_SECRET_THING" not in env_line and "DBPASSWORD" not in env_line
    assert "16 → 2" in md and "SPEC003" in md
    assert "1.32× baseline" in md and "accept length: last 1.69" in md
    assert "`AssertionError` at log line 36: draft tokens mismatch" in md
    assert "<details><summary>Log excerpt, lines" in md and "around the first error" in md
    assert not any(s in md for s in SECRETS)
    data = json.loads(render_report(path, format="json"))
    assert set(data) == CONTRACT_KEYS
    assert data["first_error"]["kind"] == "AssertionError" and data["first_error"]["line"] == 36
    assert "Traceback (most recent call last)" in data["first_error"]["traceback"]
    assert data["decode"]["samples"] == 10 and data["excerpt"]["first_line"] <= 36 <= data["excerpt"]["last_line"]
    assert data["launch"]["env"]["HF_TOKEN"] == "***"
    assert not any(s in json.dumps(data) for s in SECRETS)
    inp = report_input_from_bundle(bundle)
    assert inp.baseline_tps == 1010.0 and "--api-key" in inp.masked


def test_report_stays_under_the_cap_for_a_huge_traceback_and_log(tmp_path: Path) -> None:
    frames = [f'  File "/sgl/mod{i}.py", line {i}, in f{i}\n    call_{i}(' + "arg, " * 40 + ")" for i in range(20_000)]
    lines = ["[2025-06-01 10:00:00] server_args=ServerArgs(x=1)"]
    lines += [f"[2025-06-01 10:00:01 TP0] noise {i} " + "y" * 3000 for i in range(1000)]
    lines += ["[2025-06-01 10:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
              *"\n".join(frames).splitlines(), "RuntimeError: " + "boom " * 5000]
    lines += [f"[2025-06-01 10:00:03 TP0] after {i} " + "z" * 8000 for i in range(500)]
    log = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "huge.tar.gz"
    write_bundle(path, leaky_parts(log=log, log_budget=2_000_000, diagnoses=[SPEC003] * 500))
    inp = report_input_from_bundle(read_bundle(path))
    md = render_report(inp)
    assert len(md.encode()) <= REPORT_CAP
    assert "traceback lines cut to fit the report" in md and "RuntimeError" in md
    assert md.count("```") % 2 == 0  # every code block closed
    tiny = render_report(inp, cap=8000)
    assert len(tiny.encode()) <= 8000 and "report cut to fit" in tiny and tiny.count("```") % 2 == 0


def test_report_without_error_or_effective() -> None:
    md = render_report(ReportInput(log_lines=[f"line {i}" for i in range(100)]))
    assert "none found" in md and "Effective values unknown" in md and "lines 61–100 (end of the log)" in md
    data = json.loads(render_report(ReportInput(), format="json"))
    assert set(data) == CONTRACT_KEYS and data["first_error"] is None and data["excerpt"] is None


def test_argparse_error_is_the_first_error() -> None:
    log = "usage: launch_server.py [-h] ...\nlaunch_server.py: error: unrecognized arguments: --num-speculative-tokens 16\n"
    data = json.loads(render_report({"diagnoses": [], "errors": []}, format="json", log_text=log))
    assert data["first_error"]["kind"] == "argparse"
    assert data["first_error"]["summary"] == "unrecognized arguments: --num-speculative-tokens 16"
    assert data["first_error"]["line"] == 2
