"""`spectui watch --baseline-tps`: the slower-than-baseline rule (SPEC026) on a followed log, as in check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Real SGLang log, source: https://github.com/sgl-project/sglang/pull/6081 (file header). DP ranks decode
# at ~150-173 tok/s each; the server's rate sums the ranks in view (~500-1000 tok/s as lines arrive), so
# a 2000 tok/s baseline is never reached and a 300 tok/s one always is, however the lines are batched.
MTP_LOG = Path(__file__).resolve().parents[1] / "data" / "corpus" / "003-mtp-dp-attention-accept-len.log"


def spectui(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def slower(out: str) -> list[dict]:
    evs = [json.loads(line) for line in out.splitlines()]
    return [e for e in evs if e["type"] == "diagnosis" and e["category"] == "spec-slower-than-baseline"]


def test_watch_stdin_with_a_baseline_says_speculation_is_slower() -> None:
    text = MTP_LOG.read_text()
    res = spectui("watch", "-", "--jsonl", "--baseline-tps", "2000", stdin=text)
    # An error-severity diagnosis: exit 1, as CONTRACTS says (it used to exit 0 here).
    assert res.returncode == 1 and res.stderr == "", res.stderr
    found = slower(res.stdout)
    assert found and found[0]["rule"] == "SPEC026" and found[0]["severity"] == "error"
    assert "the 2000.0 tok/s baseline" in found[0]["message"]
    # Without a baseline (none given, none measured in an earlier launch) the rule cannot judge.
    assert slower(spectui("watch", "-", "--jsonl", stdin=text).stdout) == []
    # A baseline the server beats: no diagnosis either.
    assert slower(spectui("watch", "-", "--jsonl", "--baseline-tps", "300", stdin=text).stdout) == []


def test_watch_file_with_a_baseline_matches_check(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(MTP_LOG.read_text())
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "watch", str(log), "--jsonl", "--from-start",
                             "--duration", "60", "--baseline-tps", "2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen: list[str] = []
    try:  # read until the diagnosis comes (the duration is only a ceiling)
        while not slower("".join(seen)):
            line = proc.stdout.readline()
            assert line, "".join(seen)[-2000:]
            seen.append(line)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    found = slower("".join(seen))
    assert found[0]["rule"] == "SPEC026" and "the 2000.0 tok/s baseline" in found[0]["message"]
    # Same meaning as `spectui check --baseline-tps`: the same rule fires on the same log.
    checked = json.loads(spectui("check", "--json", str(log), "--baseline-tps", "2000").stdout)
    assert [d["rule"] for d in checked["diagnoses"] if d["category"] == "spec-slower-than-baseline"] == ["SPEC026"]


@pytest.mark.parametrize("value", ["0", "-5"])
def test_watch_rejects_a_baseline_that_is_not_positive(value: str) -> None:
    res = spectui("watch", "-", "--jsonl", f"--baseline-tps={value}", stdin="")
    assert res.returncode == 2
    assert res.stderr.strip() == "spectui watch: error: --baseline-tps must be > 0 tok/s"
