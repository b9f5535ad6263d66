"""`spectui check` as users run it: on every corpus excerpt (--json), the Rich view, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spectui import cli

# Expected values read from the files by hand (grep -c 'Decode batch' on the log part after "# ---", and the
# last "accept len:" on those lines); None = no decode line carries an accept len.
EXPECTED: dict[str, tuple[int, float | None]] = {
    "001": (7, None), "003": (5, 2.58), "004": (4, 1.72), "006": (0, None), "008": (1, 2.64), "010": (0, None),
    "012": (0, None), "014": (0, None), "015": (0, None), "017": (0, None), "020": (0, None), "022": (0, None),
    "023": (0, None), "025": (0, None), "027": (0, None), "029": (0, None), "031": (0, None), "033": (0, None),
    "036": (2, 1.00), "037": (0, None), "039": (0, None), "040": (0, None), "042": (0, None), "044": (0, None),
    "046": (0, None), "047": (0, None), "048": (0, None), "049": (0, None), "051": (2, 2.19), "053": (0, None),
    "054": (0, None), "058": (0, None), "061": (0, None), "062": (1, None), "064": (8, None), "066": (7, None),
    "067": (0, None), "070": (0, None),
}
LINES = {"001": 7, "003": 5, "004": 5, "022": 1, "051": 7, "053": 10, "062": 1}  # log lines, by wc -l


def check_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc = cli.main(["check", "--json", *argv])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_every_corpus_file_is_listed() -> None:
    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus"
    assert sorted(p.name[:3] for p in corpus.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("prefix", sorted(EXPECTED))
def test_check_json_on_corpus(prefix: str, corpus_body, capsys) -> None:
    path = corpus_body(prefix)
    rc, out = check_json(capsys, str(path))
    samples, last = EXPECTED[prefix]
    # exit status follows the diagnoses (CONTRACTS.md): 1 iff one has severity "error"
    assert rc == (1 if any(d["severity"] == "error" for d in out["diagnoses"]) else 0)
    assert out["records"]["decode"] == samples
    assert out["decode"]["samples"] == samples
    assert out["decode"]["accept_len"]["last"] == last
    assert out["lines"] == sum(out["records"].values())
    if prefix in LINES:
        assert out["lines"] == LINES[prefix]
    assert isinstance(out["diagnoses"], list)
    assert set(out) >= {"lines", "records", "sglang_version_guess", "launches", "phase", "decode", "errors"}


def test_check_json_errors_and_phase(corpus_body, capsys) -> None:
    # https://github.com/sgl-project/sglang/issues/38236
    _, out = check_json(capsys, str(corpus_body("048")))
    assert out["phase"] == "crashed"
    assert out["errors"][0]["kind"] == "AssertionError"
    assert out["errors"][0]["summary"] == "Only EAGLE and DSPARK speculative algorithms are supported for " \
        "DeepseekV4ForCausalLM"
    # https://github.com/sgl-project/sglang/issues/12818
    _, out = check_json(capsys, str(corpus_body("022")))
    assert out["errors"] == [{"line": 1, "end_line": 1, "kind": "ArgparseError", "summary":
                              "unrecognized arguments: --reasoning_parser kimi_k2", "headline":
                              "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2",
                              "frames": 0}]
    assert out["sglang_version_guess"] == "<=0.5.9"


def test_stdin_and_pass_through_options(corpus_body, capsys, monkeypatch, tmp_path) -> None:
    # https://github.com/sgl-project/sglang/pull/6081
    data = corpus_body("003").read_bytes()

    class Stdin:
        buffer = __import__("io").BytesIO(data)

    monkeypatch.setattr(sys, "stdin", Stdin)
    rc, out = check_json(capsys, "-", "--launch", "python -m sglang.launch_server --tp 8", "--sglang-version",
                         "0.5.6", "--rules", str(tmp_path))
    assert rc in (0, 1) and out["records"]["decode"] == 5
    assert out["decode"]["gen_tokens_per_s"]["last"] == 820.23  # five DP ranks of one interval, summed


def test_human_view_renders_log_text_literally(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text(
        "[2025-12-03 10:00:05 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, accept len: 1.62, "
        "cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, \n"
        "Traceback (most recent call last):\n"
        "ValueError: [bold red]not markup[/bold red] \x1b[31mred\x1b[0m\n"
    )
    out = subprocess.run([sys.executable, "-m", "spectui", "check", str(log)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode in (0, 1), out.stderr
    assert "[bold red]not markup[/bold red]" in out.stdout
    assert "\x1b" not in out.stdout  # not a terminal: no colour codes, and the log's own were stripped
    assert "1.62" in out.stdout and "ValueError" in out.stdout


def run_check(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "spectui", "check", *argv], input=stdin, capture_output=True,
                          timeout=120)


def test_missing_file_is_exit_2_with_one_line(tmp_path: Path) -> None:
    out = run_check(str(tmp_path / "nope.log"))
    assert out.returncode == 2
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "no such file" in err and "Traceback" not in err


def test_directory_and_binary_file_are_exit_2(tmp_path: Path) -> None:
    out = run_check(str(tmp_path))
    assert out.returncode == 2 and b"directory" in out.stderr and out.stderr.count(b"\n") == 1
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 4000)
    out = run_check(str(binary), "--json")
    assert out.returncode == 2 and b"does not look like a text log" in out.stderr
    assert out.stderr.count(b"\n") == 1 and out.stdout == b""


def test_bad_bytes_empty_file_and_truncated_last_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    out = run_check(str(empty), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["diagnoses"] == []
    assert json.loads(out.stdout)["lines"] == 0 and json.loads(out.stdout)["phase"] == "unknown"

    messy = tmp_path / "messy.log"
    decode = (b"[2025-12-03 10:00:05 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, "
              b"accept len: %s, cuda graph: True, gen throughput (token/s): 5.00, #queue-req: 0, ")
    messy.write_bytes(
        b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n"
        + b"NUL\x00bytes\x00here\n"
        + decode % b"1.50" + b"\n"
        + b"y" * (10 * 1024 * 1024) + b"\n"  # a 10 MB line
        + decode % b"1.75"  # truncated: no final newline
    )
    out = run_check(str(messy), "--json")
    assert out.returncode in (0, 1), out.stderr
    res = json.loads(out.stdout)
    assert res["lines"] == 5
    assert res["records"]["decode"] == 2
    assert res["decode"]["accept_len"]["last"] == 1.75
    out = run_check("-", "--json", stdin=messy.read_bytes())
    assert json.loads(out.stdout)["records"]["decode"] == 2


# Lines constructed from SGLang 0.5.6's formats (docs/REFERENCE.md §2.2 topk-1 warning, §3.2 decode line), as in
# the seed incident 000: topk 1 and 16 draft tokens without --speculative-num-steps.
SEED_LOG = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1\n"
    "[2025-12-03 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=8, speculative_algorithm='EAGLE3', "
    "speculative_num_steps=1, speculative_eagle_topk=1, speculative_num_draft_tokens=2)\n"
    "[2025-12-03 10:05:00 TP0] Decode batch, #running-req: 1, #token: 1200, token usage: 0.01, accept len: 1.60, "
    "accept rate: 0.80, cuda graph: True, gen throughput (token/s): 56.80, #queue-req: 0, \n"
)
SEED_LAUNCH = ("python3 -m sglang.launch_server --model-path /m --tp-size 8 --speculative-algorithm EAGLE3 "
               "--speculative-draft-model-path /d --speculative-eagle-topk 1 --speculative-num-draft-tokens 16")


def test_human_view_shows_message_fix_flags_and_why(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(SEED_LOG)
    out = subprocess.run([sys.executable, "-m", "spectui", "check", str(log), "--launch", SEED_LAUNCH],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    block = out.stdout[out.stdout.index("SPEC003"):]
    block = block[: block.index("\n  [", 1)] if "\n  [" in block else block
    assert "SGLang runs with 2 draft tokens, not the 16 requested" in block  # Diagnosis.message
    # #23 one voice: the fix's depth is the advisor's; no baseline here, so its modelled cost (the round split
    # with the prior step cost 0.147): E[L](k) / (1 + k c) is best at k = 2 for accept len 1.60 (r 0.95)
    assert "      fix: --speculative-num-steps 2 --speculative-num-draft-tokens 3\n" in block
    assert "modelled: no baseline at this concurrency" in block
    # the explanation's first sentence only: it ends after the quoted SGLang code, before "A chain verifies"
    assert "why: Every SGLang release from 0.4.6 on applies" in block
    assert "A chain verifies" not in block


def test_fix_flags_and_first_sentence() -> None:
    from spectui.commands.check.view import first_sentence, fix_flags
    from spectui.core.rules import Fix

    fix = Fix(set={"--speculative-num-steps": "15", "--disable-cuda-graph": "", "--chat-template": "a b"},
              unset=("--enable-beta-spec", "--speculative-token-map"))
    assert fix_flags(fix) == ("--speculative-num-steps 15 --disable-cuda-graph --chat-template 'a b'; "
                              "remove --enable-beta-spec --speculative-token-map")
    assert fix_flags(Fix(set={}, unset=("--x",))) == "remove --x"
    assert fix_flags(None) == ""
    assert first_sentence("From 0.5.4 SGLang caps it, e.g. at 48.\n  Then more.") == "From 0.5.4 SGLang caps it, e.g. at 48."
    assert first_sentence("One sentence only") == "One sentence only"


def test_a_log_without_an_sglang_line_is_exit_2(tmp_path: Path) -> None:
    """An nginx log is an input error (CONTRACTS.md): one line naming it, exit 2, no "diagnoses: none"."""
    nginx = tmp_path / "access.log"
    nginx.write_text('10.0.0.1 - - [01/Dec/2026:10:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.0"\n'
                     "2026/12/01 10:00:04 [error] 12#12: *1 open() failed (2: No such file or directory)\n"
                     "2026/12/01 10:00:05 [warn] 12#12: *2 an upstream response is buffered\n", encoding="utf-8")
    for argv, stdin, name in (([str(nginx)], None, str(nginx)), ([str(nginx), "--json"], None, str(nginx)),
                              (["-"], nginx.read_bytes(), "<stdin>")):
        out = run_check(*argv, stdin=stdin)
        assert out.returncode == 2, out
        assert out.stderr.decode() == (f"spectui check: {name}: no SGLang line found in its 3 lines (no decode, "
                                       "prefill, start-up, warning or error line): is this an SGLang server log?\n")
        assert out.stdout == b""
    # one SGLang line among them is an SGLang log (a log that is mostly access lines is still one)
    nginx.write_text(nginx.read_text() + SEED_LOG.splitlines()[2] + "\n", encoding="utf-8")
    out = run_check(str(nginx), "--json")
    assert out.returncode in (0, 1) and json.loads(out.stdout)["records"]["decode"] == 1
