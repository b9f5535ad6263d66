"""Launch commands as users paste them: parse, render round-trip, edit, diff."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from spectui.core.launch import (
    FlagChange,
    LaunchCommand,
    diff,
    load_catalogue,
    parse_command,
    set_flag,
    unset_flag,
)
from spectui.errors import CommandParseError

# The third launch of the seed incident (/work/shared/seeds/002_*.txt, message 4344), verbatim with the
# `echo` line that followed it.
SEED_SSH = (
    "ssh -o ConnectTimeout=10 root@10.1.230.174 'nohup bash -c \"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "
    "NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=16777216 "
    "NCCL_NTHREADS=512 ~/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 "
    "--trust-remote-code --tp-size 8 --mem-fraction-static 0.88 --host 0.0.0.0 --port 8000 "
    "--num-continuous-decode-steps 4 --disable-custom-all-reduce --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path /data/eagle3/output_100k_sglang/4 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 16 --speculative-num-steps 1 --log-level info\" > "
    "/data/eagle3/synth_100k/logs/sglang_eagle3_16.log 2>&1 &'\n"
    'echo "Server starting with EAGLE3, 16 draft tokens, num-steps=1"'
)

CASES = [
    SEED_SSH,
    "python -m sglang.launch_server --model-path /m --tp 8",
    "CUDA_VISIBLE_DEVICES=0,1 nohup python3 -m sglang.launch_server --model-path $MODEL --port ${PORT} "
    "> log 2>&1 &",
    "export HF_TOKEN=abc && export A='x y' && cd /work && sglang serve /models/x --tp 2",
    "docker run --gpus all -e HF_TOKEN=x --ipc=host lmsysorg/sglang:latest python3 -m sglang.launch_server "
    "--model-path <MODEL_PATH> --host 0.0.0.0",
    "# launch the target\npython3 -m sglang.launch_server \\\n  --model-path /m \\\n  --speculative-algorithm EAGLE3  # EAGLE-3\n",
    "env -u X NCCL_DEBUG=INFO setsid /opt/venv/bin/python3 -u -m sglang.launch_server "
    "--model-path '/my models/x' --json-model-override-args '{\"a\": 1}'",
    'bash -c "python -m sglang.launch_server --model-path /m"',
    "python3 -m sglang.launch_server --model-path=/m --speculative-num-step 3 --speculative-num-step=4",
]


@pytest.mark.parametrize("text", CASES)
def test_render_then_parse_is_identity(text: str) -> None:
    cmd = parse_command(text)
    assert parse_command(cmd.render()) == cmd


def test_seed_ssh_command() -> None:
    cmd = parse_command(SEED_SSH)
    assert cmd.program == ("~/ml-env/bin/python3", "-m", "sglang.launch_server")
    assert dict(cmd.env)["NCCL_PROTO"] == "LL" and len(cmd.env) == 7
    assert cmd.args[:2] == ("--model-path", "/shared/kimi-k2.5-int4")
    assert cmd.args[-4:] == ("--speculative-num-steps", "1", "--log-level", "info")
    assert [layer.words for layer in cmd.outer] == [
        ("ssh", "-o", "ConnectTimeout=10", "root@10.1.230.174"), ("nohup", "bash", "-c")]
    assert cmd.outer[1].redirects == ("> /data/eagle3/synth_100k/logs/sglang_eagle3_16.log", "2>&1", "&")
    assert cmd.placeholders == ()


def test_seed_file_when_present() -> None:
    # The write-up itself, when this checkout sits beside it; the command above is a verbatim copy.
    seeds = sorted(Path("/work/shared/seeds").glob("002_*.txt")) if Path("/work/shared/seeds").exists() else []
    for seed in seeds:
        text = seed.read_text()
        start = text.index("ssh -o ConnectTimeout")
        assert text[start:text.index("\n\n", start)] == SEED_SSH


def test_env_wrappers_redirects_placeholders() -> None:
    cmd = parse_command(CASES[2])
    assert cmd.env == (("CUDA_VISIBLE_DEVICES", "0,1"),)
    assert cmd.wrapper == ("nohup",)
    assert cmd.redirects == ("> log", "2>&1", "&")
    assert cmd.placeholders == ("$MODEL", "${PORT}")
    assert cmd.argv == ["python3", "-m", "sglang.launch_server", "--model-path", "$MODEL", "--port", "${PORT}"]


def test_export_prelude_and_sglang_serve_positional() -> None:
    cmd = parse_command(CASES[3])
    assert cmd.env == (("HF_TOKEN", "abc"), ("A", "x y"))
    assert cmd.prelude == ("cd /work",)
    assert cmd.program == ("sglang", "serve") and cmd.args[0] == "/models/x"
    assert cmd.entry == "sglang"


def test_docker_and_doc_placeholder() -> None:
    cmd = parse_command(CASES[4])
    assert cmd.wrapper[:2] == ("docker", "run") and cmd.wrapper[-1] == "lmsysorg/sglang:latest"
    assert cmd.env == ()  # -e HF_TOKEN=x belongs to docker
    assert cmd.placeholders == ("<MODEL_PATH>",)


def test_continuations_and_comments() -> None:
    cmd = parse_command(CASES[5])
    assert cmd.args == ("--model-path", "/m", "--speculative-algorithm", "EAGLE3")
    # As in a real shell, a comment line inside a continuation ends the command there.
    cut = parse_command("python3 -m sglang.launch_server \\\n --model-path /m \\\n # note\n --tp 2")
    assert cut.args == ("--model-path", "/m")


def test_quoted_values_kept_verbatim() -> None:
    cmd = parse_command(CASES[6])
    assert cmd.env == (("NCCL_DEBUG", "INFO"),)
    assert cmd.program == ("/opt/venv/bin/python3", "-u", "-m", "sglang.launch_server")
    assert cmd.args == ("--model-path", "/my models/x", "--json-model-override-args", '{"a": 1}')


def test_argv_list_input() -> None:
    cmd = parse_command(["FOO=1", "python", "-m", "sglang.launch_server", "--model-path", "/a b"])
    assert cmd.env == (("FOO", "1"),) and cmd.args == ("--model-path", "/a b")


@pytest.mark.parametrize("bad, words", [
    ("", "empty"), ("   \n", "empty"), ("# just a comment", "empty"),
    ("python -m sglang.launch_server --model-path '/m", "unbalanced"),
    ('python -m sglang.launch_server --model-path "/m', "unbalanced"),
    ("vllm serve meta-llama/Llama-3.1-8B", "not an SGLang launch command"),
    ("python train.py --lr 1e-4", "not an SGLang launch command"),
])
def test_bad_input_one_line_error(bad: str, words: str) -> None:
    with pytest.raises(CommandParseError) as exc:
        parse_command(bad)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def _cmd(args: str) -> LaunchCommand:
    return parse_command("python3 -m sglang.launch_server " + args)


def test_set_replaces_every_occurrence_in_place_with_full_name() -> None:
    cat = load_catalogue("0.5.6.post2")
    cmd = _cmd("--model-path /m --speculative-num-step 3 --tp 2 --speculative-num-steps=4")
    out = set_flag(cmd, "speculative-num-steps", "15", cat)
    assert out.args == ("--model-path", "/m", "--speculative-num-steps", "15", "--tp", "2")


def test_set_alias_and_store_true_and_append() -> None:
    cat = load_catalogue("0.5.6.post2")
    cmd = _cmd("--model /m --speculative-draft-model /d")
    out = set_flag(cmd, "--speculative-draft-model-path", "/d2", cat)
    assert out.args == ("--model", "/m", "--speculative-draft-model-path", "/d2")
    out = set_flag(out, "enable-metrics", None, cat)
    assert out.args[-1] == "--enable-metrics"
    assert set_flag(_cmd("--disable-cuda-graph --tp 2"), "disable-cuda-graph", None, cat).args == (
        "--disable-cuda-graph", "--tp", "2")


def test_unset_removes_values_and_keeps_order() -> None:
    cat = load_catalogue("0.5.6.post2")
    cmd = _cmd("--model-path /m --speculative-num-draft-tokens 16 --enable-metrics --speculative-num-draft 8 --tp 2")
    out = unset_flag(cmd, "speculative-num-draft-tokens", cat)
    assert out.args == ("--model-path", "/m", "--enable-metrics", "--tp", "2")
    assert unset_flag(cmd, "--not-there", cat) == cmd


def test_edit_without_catalogue_matches_exact_names() -> None:
    cmd = _cmd("--model-path /m --tp 2 --tp=4")
    assert set_flag(cmd, "tp", "8").args == ("--model-path", "/m", "--tp", "8")


def test_diff_flag_by_flag() -> None:
    cat = load_catalogue("0.5.6.post2")
    old = _cmd("--model-path /m --speculative-num-draft-tokens 16 --speculative-eagle-topk 1 --enable-metrics")
    new = set_flag(unset_flag(old, "enable-metrics", cat), "speculative-num-steps", "15", cat)
    new = set_flag(new, "speculative-num-draft-tokens", "16", cat)
    assert diff(old, new, cat) == [FlagChange("--enable-metrics", "", None),
                                   FlagChange("--speculative-num-steps", None, "15")]
    assert diff(old, old, cat) == []


def test_edits_survive_a_render_round_trip() -> None:
    cmd = parse_command(SEED_SSH)
    out = set_flag(cmd, "speculative-num-steps", "15")
    again = parse_command(out.render())
    assert again == out and again.outer == cmd.outer
    assert "--speculative-num-steps 15" in out.render()



# The simulated SGLang (CONTRACTS.md: `python -m spectui.sim [SGLang flags]`, its own knobs in
# SPECTUI_SIM_* variables), as `setsid nohup … > server.log 2>&1 &` starts it and as /proc shows it afterwards.
SIM_ARGS = ("--model-path /m --port=31000 --speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
            "--speculative-eagle-topk 1 --speculative-num-draft-tokens 16 --speculative-num-steps 1")
SIM = (f"SPECTUI_SIM_TIME_SCALE=40 SPECTUI_SIM_FAULT='crash-after 3' setsid nohup /usr/bin/python3 -m spectui.sim "
       f"{SIM_ARGS} > server.log 2>&1 &")


def test_simulator_parses_as_a_launch() -> None:
    cmd = parse_command(SIM)
    assert cmd.program == ("/usr/bin/python3", "-m", "spectui.sim") and cmd.is_simulator
    assert cmd.env == (("SPECTUI_SIM_TIME_SCALE", "40"), ("SPECTUI_SIM_FAULT", "crash-after 3"))
    assert cmd.wrapper == ("setsid", "nohup") and cmd.redirects == ("> server.log", "2>&1", "&")
    assert cmd.args == tuple(SIM_ARGS.split())  # every word, in order: a relaunch restarts it unchanged
    assert cmd.sglang_args == cmd.args  # SGLang's command line alone: the launch model knows no knobs
    assert parse_command(cmd.render()) == cmd
    assert parse_command(cmd.argv) == replace(cmd, env=(), wrapper=(), redirects=())  # /proc's argv
    assert cmd.entry == "launch_server"
    assert parse_command(SIM.replace("-m spectui.sim", "-m sglang.launch_server")).args == cmd.args
    edited = set_flag(cmd, "speculative-num-steps", "3")
    assert diff(cmd, edited) == [FlagChange("--speculative-num-steps", "1", "3")]
    assert edited.env == cmd.env


def test_the_simulators_own_flags_are_not_judged_as_sglangs() -> None:
    """README starts the simulator with `--sim-traffic 2` on its command line: the resolver, the rules and
    the relaunch verdict must see SGLang's flags only (before, argparse's 'unrecognized arguments' left the
    config panel blank and made every relaunch of it need --force); a relaunch keeps the knobs."""
    from spectui.core.launch import resolve

    typed = ("--model-path /m --sim-traffic 2 --speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
             "--sim-fault crash-after 3 --speculative-num-steps 1 --sim-seed=4 --speculative-eagle-topk 1 "
             "--speculative-num-draft-tokens 16 --port 1")
    cmd = parse_command(f"python3 -m spectui.sim {typed}")
    assert cmd.args == tuple(typed.split())  # what a relaunch starts again
    assert cmd.sglang_args == ("--model-path", "/m", "--speculative-algorithm", "EAGLE3",
                               "--speculative-draft-model-path", "/d", "--speculative-num-steps", "1",
                               "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16", "--port", "1")
    res = resolve(list(cmd.sglang_args), "0.5.23", entry=cmd.entry)
    assert res.outcome == "ok" and res.effective["speculative_num_draft_tokens"] == 2
    real = parse_command(f"python3 -m sglang.launch_server {typed}")  # real SGLang: the same words are errors
    assert real.sglang_args == real.args
    assert resolve(list(real.sglang_args), "0.5.23").argparse_error.startswith("unrecognized arguments: --sim-traffic")
    # unset_flag is generic: one value word, whatever the flag
    assert unset_flag(parse_command("python3 -m spectui.sim --model-path /m --sim-fault crash-after 3"),
                      "sim-fault").args == ("--model-path", "/m", "3")


def test_simulator_launch_is_judged_on_sglang_flags_only() -> None:
    from spectui.core.launch import resolve

    cmd = parse_command(SIM)
    res = resolve(list(cmd.sglang_args), "0.5.6", entry=cmd.entry)
    assert res.outcome == "ok" and res.effective is not None
    assert res.effective["speculative_num_draft_tokens"] == 2  # the seed's override, through the simulator
