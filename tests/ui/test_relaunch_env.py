"""The relaunch screen's environment line: the launch's variables as NAME=VALUE words, secrets masked and
kept unless edited, edits becoming ops.relaunch.plan.Edits env_sets / env_unsets."""

from __future__ import annotations

import dataclasses

from textual.widgets import Input

from spectui.core.launch import parse_command
from spectui.sources.base import ServerProcess
from spectui.ui.app import SpectuiApp
from spectui.ui.relaunch_model import build_command, edits_from, evaluate, split_command
from spectui.ui.session import Session, replay_lines

ARGV = ("python3", "-m", "sglang.launch_server", "--model-path", "/m", "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", "/d", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4")
ENV = {"PATH": "/usr/bin", "HOME": "/root", "NCCL_PROTO": "LL", "HF_TOKEN": "hf_secret",
       "SGLANG_ENABLE_JIT_DEEPGEMM": "0", "CUDA_VISIBLE_DEVICES": "0,1"}


def test_the_line_shows_launch_variables_with_secrets_masked() -> None:
    draft = split_command(parse_command(list(ARGV)), None, ENV)
    assert draft.env == "NCCL_PROTO=LL HF_TOKEN=*** SGLANG_ENABLE_JIT_DEEPGEMM=0 CUDA_VISIBLE_DEVICES=0,1"
    assert "PATH" not in draft.env and "hf_secret" not in draft.env  # the rest is carried over unseen
    # The launch command's own assignments are shown too (quoted like a shell would need them).
    pasted = parse_command("FOO='a b' " + " ".join(ARGV))
    assert split_command(pasted, None, None).env == "FOO='a b'"


def test_edits_on_the_line_become_env_edits() -> None:
    cmd = parse_command(list(ARGV))
    draft = split_command(cmd, None, ENV)
    line = draft.env.replace("NCCL_PROTO=LL ", "") + " SPECTUI_SIM_FAULT=oom-at-capture NCCL_DEBUG='x y'"
    edited = dataclasses.replace(draft, env=line)
    new = build_command(cmd, edited)
    assert dict(new.env)["HF_TOKEN"] == "hf_secret"  # masked and untouched: kept as it was
    edits = edits_from(cmd, new, draft.env_base)
    assert edits.env_sets == (("SPECTUI_SIM_FAULT", "oom-at-capture"), ("NCCL_DEBUG", "x y"))
    assert edits.env_unsets == ("NCCL_PROTO",) and edits.sets == () and edits.unsets == ()
    # A new secret value is sent as typed, and shown masked in the changes.
    typed = dataclasses.replace(draft, env=draft.env.replace("HF_TOKEN=***", "HF_TOKEN=hf_new"))
    ev = evaluate(cmd, typed, None)
    assert ev.launchable and "env HF_TOKEN  *** → ***" in ev.text.plain and "hf_" not in ev.text.plain
    assert edits_from(cmd, ev.command, draft.env_base).env_sets == (("HF_TOKEN", "hf_new"),)
    # Nothing edited: no env edits at all, a plain restart.
    same = evaluate(cmd, draft, None)
    assert edits_from(cmd, same.command, draft.env_base).env_sets == () and "none (a plain restart)" in same.text.plain


def test_a_bad_word_is_one_clear_error() -> None:
    cmd = parse_command(list(ARGV))
    draft = split_command(cmd, None, ENV)
    for line, needle in (("NCCL_PROTO", "'NCCL_PROTO' is not NAME=VALUE"), ("X='open", "No closing quotation")):
        ev = evaluate(cmd, dataclasses.replace(draft, env=line), None)
        assert not ev.launchable and ev.text.plain.startswith("environment: ") and needle in ev.text.plain


async def test_the_screen_edits_the_environment_line() -> None:
    from spectui.ui.screens.relaunch import RelaunchScreen

    server = ServerProcess(pid=4242, pgid=4242, argv=ARGV, env=ENV, cwd="/root", log_path="/l/s.log", port=30000,
                           host_addr="127.0.0.1", program="python -m sglang.launch_server")
    session = Session(label="gpu1", log_path="recorded.log", server=server, launch=parse_command(list(ARGV)),
                      tail_factory=replay_lines([]), replay=True, probe_gpus=False)
    app = SpectuiApp(session, clock=lambda: 1000.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RelaunchScreen)
        env = screen.query_one("#env", Input)
        assert env.value == "NCCL_PROTO=LL HF_TOKEN=*** SGLANG_ENABLE_JIT_DEEPGEMM=0 CUDA_VISIBLE_DEVICES=0,1"
        env.value = env.value.replace("NCCL_PROTO=LL", "NCCL_PROTO=Simple")
        await pilot.pause()
        text = screen.evaluation.text.plain
        assert "env NCCL_PROTO  LL → Simple" in text and "hf_secret" not in text
        edits = edits_from(session.launch, screen.evaluation.command, screen.draft.env_base)
        assert edits.env_sets == (("NCCL_PROTO", "Simple"),) and edits.env_unsets == ()
        await pilot.press("escape")
