"""The relaunch plan without a host: edits, diff, verdict, new log name, exact host commands."""

from __future__ import annotations

from datetime import datetime

import pytest

from spectui.core.launch import parse_command, resolvable_args, resolve
from spectui.errors import UsageError
from spectui.ops.hostcmds import display_argv, env_input, parse_gpu_apps, redact_env
from spectui.ops.relaunch.plan import Edits, build_plan, new_log_path, port_of
from spectui.sources.base import ServerProcess

NOW = datetime(2026, 11, 30, 15, 4, 5)
# The seed launch (/work/shared/seeds/002), as /proc/PID/cmdline shows it.
SEED = ("/root/ml-env/bin/python3", "-m", "sglang.launch_server", "--model-path", "/shared/kimi-k2.5-int4",
        "--trust-remote-code", "--tp-size", "8", "--port", "8000", "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", "/data/eagle3/output_100k_sglang/4", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "16", "--speculative-num-steps", "1")


def server(argv: tuple[str, ...] = SEED, **kw: object) -> ServerProcess:
    base = dict(pid=4242, pgid=4242, argv=argv, env={"NCCL_PROTO": "LL", "HF_TOKEN": "hf_secret"},
                cwd="/root", log_path="/data/eagle3/synth_100k/logs/sglang_eagle3_16.log", port=8000,
                host_addr="127.0.0.1", program="python -m sglang.launch_server")
    base.update(kw)
    return ServerProcess(**base)  # type: ignore[arg-type]


def test_edits_from_cli() -> None:
    e = Edits.from_cli(["speculative-num-steps=15", "--enable-metrics", "served-model-name=a=b"], ["x"])
    assert e.sets == (("speculative-num-steps", "15"), ("enable-metrics", None), ("served-model-name", "a=b"))
    assert e.unsets == ("x",)
    for bad in (["=3"], ["--"]):
        with pytest.raises(UsageError, match="FLAG=VALUE"):
            Edits.from_cli(bad)
    with pytest.raises(UsageError):
        Edits.from_cli([], ["a=b"])


def test_seed_plan_undoes_the_silent_override() -> None:
    plan = build_plan(server(), Edits.from_cli(["speculative-num-steps=15"]), host_name="root@gpu1", now=NOW,
                      server_version="0.5.6")
    assert [(c.flag, c.old, c.new) for c in plan.changes] == [("--speculative-num-steps", "1", "15")]
    assert plan.resolution.outcome == "ok" and not plan.needs_force
    assert plan.version == "0.5.6" and "0.5.6" in plan.version_note  # every release's catalogue ships now
    assert ("speculative_num_draft_tokens", 2, 16) in plan.effective_changes
    assert plan.new.argv == [*SEED[:-1], "15"]
    assert plan.log_path == "/data/eagle3/synth_100k/logs/sglang_eagle3_16-20261130-150405.log"
    assert plan.port == 8000


def test_a_restore_starts_the_original_command_line_in_its_own_order() -> None:
    """bench --baseline: every --speculative-* flag was unset; the restore gives the original back exactly."""
    plain = tuple(a for i, a in enumerate(SEED) if i < 10)  # the command without speculation
    assert not any(a.startswith("--speculative") for a in plain)
    plan = build_plan(server(plain), Edits(argv=SEED), host_name="root@gpu1", now=NOW, server_version="0.5.6")
    assert plan.new.argv == list(SEED)
    assert [c.flag for c in plan.changes][:1] == ["--speculative-algorithm"] and len(plan.changes) == 5
    edited = build_plan(server(plain), Edits(sets=(("speculative-num-steps", "3"),), argv=SEED),
                        host_name="root@gpu1", now=NOW, server_version="0.5.6")
    assert edited.new.argv == [*SEED[:-1], "3"]  # flag edits apply to the given command line


def test_unknown_version_uses_newest_and_says_so() -> None:
    plan = build_plan(server(), Edits(), host_name="local", now=NOW)
    assert plan.version_note == "server version unknown, newest bundled release used"
    assert plan.changes == ()


def test_rejected_command_needs_force() -> None:
    plan = build_plan(server(), Edits.from_cli(["num-speculative-tokens=16"]), host_name="local", now=NOW)
    assert plan.needs_force and plan.resolution.outcome == "argparse_error"
    assert "unrecognized arguments: --num-speculative-tokens 16" in plan.verdict_line


def test_unset_of_absent_flag_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="has no --enable-metrics"):
        build_plan(server(), Edits.from_cli([], ["enable-metrics"]), host_name="local", now=NOW)


def test_host_commands_are_exact_argv_with_values_as_parameters() -> None:
    plan = build_plan(server(), Edits.from_cli(["served-model-name=$(reboot); 'x'"]), host_name="local", now=NOW)
    cmds = dict((why, argv) for why, argv in plan.host_commands() if why)
    start = cmds["start the new command detached"]
    assert start[:2] == ["sh", "-c"] and "$(reboot)" not in start[2]  # the script is fixed text
    assert start[3:6] == ["sh", "/root", plan.log_path]
    assert start[-len(plan.new.argv):] == plan.new.argv
    assert not any("hf_secret" in w or "NCCL_PROTO" in w for w in start)  # no environment on a command line
    env = env_input(plan.new_env)  # it goes on the start's standard input
    assert "export NCCL_PROTO=LL\n" in env and "export HF_TOKEN=hf_secret\n" in env  # same environment
    shown = plan.render()
    assert "hf_secret" not in shown and "variables from /proc/" in shown  # the environment, summarised
    shown_json = "\n".join(plan.to_json()["host_commands"])
    assert "hf_secret" not in shown_json and "HF_TOKEN" not in shown_json and "NCCL_PROTO" not in shown_json
    assert cmds["stop: SIGTERM to process group 4242"] == ["sh", "-c", 'kill -s "$1" -- "-$2"', "sh", "TERM", "4242"]


def test_plan_for_group_one_is_refused() -> None:
    plan = build_plan(server(pgid=1), Edits(), host_name="local", now=NOW)
    assert plan.host_commands()[0][0].startswith("REFUSED")


def test_new_log_path() -> None:
    assert new_log_path("/l/server.log", "/c", NOW) == "/l/server-20261130-150405.log"
    # A second relaunch does not stack timestamps, and never reuses a name.
    assert new_log_path("/l/server-20261129-010101.log", "/c", NOW) == "/l/server-20261130-150405.log"
    assert new_log_path("/l/s.log", "/c", NOW, ["/l/s-20261130-150405.log"]) == "/l/s-20261130-150405-1.log"
    assert new_log_path(None, "/work dir", NOW) == "/work dir/sglang-20261130-150405.log"
    assert new_log_path("/l/out.txt", "/c", NOW) == "/l/out.txt-20261130-150405.log"


def test_port_and_the_simulator() -> None:
    # The simulator's /proc argv parses as a launch like SGLang's (core.launch); with its knobs in its
    # environment its args are SGLang's alone.
    cmd = parse_command(["/usr/bin/python3", "-m", "spectui.sim", "--model-path", "/m", "--port=31000",
                         "--tp-size", "2"])
    assert cmd.program == ("/usr/bin/python3", "-m", "spectui.sim")
    assert port_of(cmd, None) == 31000
    assert resolvable_args(cmd) == cmd.args == ("--model-path", "/m", "--port=31000", "--tp-size", "2")
    # A `--sim-*` knob typed on the simulator's command line is the simulator's, not SGLang's: the verdict
    # judges the rest (the simulator itself refuses an unknown knob at start, and a relaunch rolls back).
    typed = parse_command("python3 -m spectui.sim --model-path /m --sim-traffic 1 --tp-size 2")
    assert resolvable_args(typed) == ("--model-path", "/m", "--tp-size", "2")
    assert typed.args == ("--model-path", "/m", "--sim-traffic", "1", "--tp-size", "2")
    assert resolve(list(resolvable_args(typed)), "0.5.6").outcome == "ok"
    # The same word given to SGLang itself is what argparse says it is.
    real = parse_command("python3 -m sglang.launch_server --model-path /m --sim-traffic 1")
    assert "unrecognized arguments: --sim-traffic 1" in str(resolve(list(resolvable_args(real)), "0.5.6").argparse_error)


def test_plan_for_the_simulator_sets_a_knob_variable_and_judges_sglang_flags() -> None:
    sim = ("/usr/bin/python3", "-m", "spectui.sim", *SEED[3:])
    env = {"SPECTUI_SIM_TIME_SCALE": "40", "NCCL_PROTO": "LL"}
    plan = build_plan(server(sim, env=env), Edits.from_cli(["speculative-num-steps=15"],
                                                           env_sets=["SPECTUI_SIM_FAULT=oom-at-capture"]),
                      host_name="local", now=NOW)
    assert plan.resolution.outcome == "ok" and not plan.needs_force
    assert [(c.flag, c.old, c.new) for c in plan.changes] == [("--speculative-num-steps", "1", "15")]
    assert [(e.name, e.old, e.new) for e in plan.env_changes] == [("SPECTUI_SIM_FAULT", None, "oom-at-capture")]
    assert plan.new.argv == [*sim[:-1], "15"]  # SGLang's command line, nothing else
    assert dict(plan.new_env) == {**env, "SPECTUI_SIM_FAULT": "oom-at-capture"}


def test_env_edits_reach_the_start_command_diff_and_json() -> None:
    edits = Edits.from_cli(env_sets=["NCCL_DEBUG=INFO", "NCCL_PROTO=Simple"], env_unsets=["HF_TOKEN"])
    assert edits.env_sets == (("NCCL_DEBUG", "INFO"), ("NCCL_PROTO", "Simple")) and edits.env_unsets == ("HF_TOKEN",)
    plan = build_plan(server(), edits, host_name="local", now=NOW)
    assert plan.changes == () and not plan.needs_force
    assert [(e.name, e.old, e.new) for e in plan.env_changes] == [
        ("NCCL_PROTO", "LL", "Simple"), ("HF_TOKEN", "hf_secret", None), ("NCCL_DEBUG", None, "INFO")]
    start, env = plan.start_argv(), env_input(plan.new_env)
    assert "export NCCL_PROTO=Simple\n" in env and "export NCCL_DEBUG=INFO\n" in env
    assert "NCCL_PROTO=LL" not in env and "HF_TOKEN" not in env
    assert start[-len(plan.new.argv):] == plan.new.argv
    shown = plan.render()
    assert "changes  none" not in shown
    assert "  env NCCL_PROTO  LL -> Simple" in shown and "  env NCCL_DEBUG  (absent) -> INFO" in shown
    assert "  env HF_TOKEN    *** -> (absent)" in shown and "hf_secret" not in shown
    assert "edited as above" in shown
    out = plan.to_json()
    assert out["env_diff"] == [{"name": "NCCL_PROTO", "old": "LL", "new": "Simple"},
                               {"name": "HF_TOKEN", "old": "***", "new": None},
                               {"name": "NCCL_DEBUG", "old": None, "new": "INFO"}]
    assert out["diff"] == [] and "hf_secret" not in str(out)


def test_a_secret_set_through_env_stays_masked_in_the_plan() -> None:
    plan = build_plan(server(), Edits.from_cli(env_sets=["HF_TOKEN=hf_new", "OPENAI_API_KEY=sk-live"]),
                      host_name="local", now=NOW)
    assert "export HF_TOKEN=hf_new\n" in env_input(plan.new_env)  # the real value reaches the server
    shown, out = plan.render(), str(plan.to_json())
    for text in (shown, out):
        assert "hf_new" not in text and "sk-live" not in text and "hf_secret" not in text
    assert "  env HF_TOKEN        *** -> ***" in shown and "  env OPENAI_API_KEY  (absent) -> ***" in shown
    assert "HF_TOKEN" not in "\n".join(plan.to_json()["host_commands"])  # never a value on a command line


def test_env_edit_usage_errors() -> None:
    for bad in (["NCCL_DEBUG"], ["=1"], ["1X=2"], ["A B=1"]):
        with pytest.raises(UsageError, match="NAME=VALUE"):
            Edits.from_cli(env_sets=bad)
    with pytest.raises(UsageError, match="variable name"):
        Edits.from_cli(env_unsets=["A=1"])
    with pytest.raises(UsageError, match="has no NCCL_DEBUG; nothing to remove"):
        build_plan(server(), Edits.from_cli(env_unsets=["NCCL_DEBUG"]), host_name="local", now=NOW)
    # An empty value is a value (set, not removed).
    plan = build_plan(server(), Edits.from_cli(env_sets=["NCCL_PROTO="]), host_name="local", now=NOW)
    assert plan.new_env["NCCL_PROTO"] == "" and "export NCCL_PROTO=''\n" in env_input(plan.new_env)


def test_gpu_apps_and_redaction() -> None:
    # nvidia-smi --query-compute-apps=pid,used_memory --format=csv
    text = "pid, used_memory [MiB]\n1234, 71234 MiB\n5678, 100 MiB\n"
    assert [(a.pid, a.used_memory) for a in parse_gpu_apps(text)] == [(1234, "71234 MiB"), (5678, "100 MiB")]
    assert parse_gpu_apps("No running processes found\n") == []
    assert redact_env({"HF_TOKEN": "x", "OPENAI_API_KEY": "y", "CUDA_VISIBLE_DEVICES": "0"}) == {
        "HF_TOKEN": "***", "OPENAI_API_KEY": "***", "CUDA_VISIBLE_DEVICES": "0"}
    assert display_argv(["env", "HF_TOKEN=x", "a b"], {"HF_TOKEN": "x"}) == "env 'HF_TOKEN=***' 'a b'"
    assert display_argv(["sglang", "serve", "--api-key", "sk-1", "--admin-api-key=sk-2", "--port", "1"]) == (
        "sglang serve --api-key '***' '--admin-api-key=***' --port 1")
    assert display_argv(["--speculative-token-map", "/m.pt", "--tokenizer-path", "/t"]) == (
        "--speculative-token-map /m.pt --tokenizer-path /t")
    assert redact_env({"TOKENIZERS_PARALLELISM": "false", "AWS_SECRET_ACCESS_KEY": "s"}) == {
        "TOKENIZERS_PARALLELISM": "false", "AWS_SECRET_ACCESS_KEY": "***"}
