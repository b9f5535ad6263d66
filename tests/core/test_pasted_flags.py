"""Flags pasted alone (`--speculative-algorithm EAGLE3 …`, as copied from an issue) are a launch_server command,
and every entry point (flags, check --launch, rule examples) says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core.launch import ASSUMED_NOTE, parse_pasted
from spectui.errors import CommandParseError

FLAGS = ("--model-path m --speculative-algorithm EAGLE3 --speculative-draft-model-path d "
         "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 8")


@pytest.mark.parametrize("text, env", [
    (FLAGS, ()),
    ("\n  " + FLAGS.replace(" --spec", " \\\n  --spec"), ()),
    ("# from the issue\n" + FLAGS, ()),
    ("SGLANG_ENABLE_SPEC_V2=1 " + FLAGS, (("SGLANG_ENABLE_SPEC_V2", "1"),)),
    (FLAGS.split(), ()),
])
def test_flags_alone_assume_launch_server(text, env) -> None:
    cmd, note = parse_pasted(text)
    assert note == ASSUMED_NOTE
    assert cmd.program == ("python", "-m", "sglang.launch_server") and cmd.entry == "launch_server"
    assert cmd.env == env
    assert cmd.args == tuple(FLAGS.split())


def test_a_whole_command_is_taken_as_it_is() -> None:
    cmd, note = parse_pasted("sglang serve " + FLAGS)
    assert note is None and cmd.program == ("sglang", "serve")


@pytest.mark.parametrize("text", ["vllm serve m --num-speculative-tokens 5", "hello world", "", "--"])
def test_neither_flags_nor_a_command_is_still_an_error(text: str) -> None:
    with pytest.raises(CommandParseError):
        parse_pasted(text)


def _spectui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=120)


def test_flags_command_accepts_flags_alone() -> None:
    out = _spectui("flags", "--sglang-version", "0.5.23", "--json", "--", *FLAGS.split())
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["program"] == "python -m sglang.launch_server"
    assert ASSUMED_NOTE in doc["notes"]
    assert doc["effective"]["speculative_num_draft_tokens"] == 4
    human = _spectui("flags", "--", FLAGS)
    assert human.returncode == 0 and "assuming `python -m sglang.launch_server`" in human.stdout


def test_check_launch_accepts_flags_alone(tmp_path: Path) -> None:
    log = tmp_path / "empty.log"
    log.write_text("")
    out = _spectui("check", str(log), "--json", "--sglang-version", "0.5.23", "--launch", FLAGS)
    assert out.returncode != 2, out.stderr
    assert "assuming `python -m sglang.launch_server`" in out.stderr
    doc = json.loads(out.stdout)
    assert "SPEC003" in {d["rule"] for d in doc["diagnoses"]}


def test_rule_example_launch_may_be_flags_alone() -> None:
    from spectui.core.rules import parse_launch

    assert parse_launch(FLAGS).entry == "launch_server"
