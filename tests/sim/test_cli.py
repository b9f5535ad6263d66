"""The simulator's command line fails exactly like SGLang's (docs/REFERENCE.md §1.4, §2.1, §2.2)."""

from __future__ import annotations

import re
import socket

from tests.sim.conftest import CHAIN3, EAGLE3, FAST, run_sim

TS = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] ")
ADJUSTED = "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
MAX_RUNNING = ("Max running requests is reset to 48 for speculative decoding. You can override this by "
               "explicitly setting --max-running-requests.")


def test_unknown_flag_is_argparse_usage_and_error_exit_2() -> None:
    res = run_sim([*EAGLE3, "--num-speculative-tokens", "16"])
    assert res.returncode == 2
    lines = res.stderr.splitlines()
    usage_at = next(i for i, line in enumerate(lines) if line.startswith("usage: "))
    assert lines[usage_at].startswith("usage: sglang serve [-h]")
    assert lines[-1] == "sglang serve: error: unrecognized arguments: --num-speculative-tokens 16"
    assert res.stdout == ""


def test_old_release_names_launch_server_py() -> None:
    res = run_sim([*EAGLE3, "--speculative-algorithm", "eagle3", "--sim-sglang-version", "0.5.6.post2"])
    assert res.returncode == 2
    assert res.stderr.splitlines()[0].startswith("usage: launch_server.py [-h]")
    assert res.stderr.splitlines()[-1] == (
        "launch_server.py: error: argument --speculative-algorithm: invalid choice: 'eagle3' "
        "(choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')")


def test_missing_steps_is_a_bare_assertion_after_bare_warnings_on_056() -> None:
    # The seed's second launch: topk and draft tokens without --speculative-num-steps.
    res = run_sim([*EAGLE3, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
                   "--sim-sglang-version", "0.5.6.post2"])
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert lines[0] == MAX_RUNNING  # bare: logging is not configured yet on ≤0.5.10
    tb = lines.index("Traceback (most recent call last):")
    assert all(not TS.match(line) for line in lines[:tb])
    assert lines[-1] == "AssertionError"
    assert re.search(r'server_args\.py", line 1725, in _handle_speculative_decoding$', lines[-3])


def test_warnings_are_timestamped_from_0511_and_type_error_in_the_hook() -> None:
    res = run_sim([*EAGLE3, "--speculative-num-steps", "3"])  # newest release, topk missing
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert any(TS.match(line) and line.endswith(MAX_RUNNING) for line in lines)
    assert lines[-1] == "TypeError: '>' not supported between instances of 'NoneType' and 'int'"
    assert "speculative_hook.py" in lines[-3] and "_handle_eagle_family" in lines[-3]


def test_topk1_adjustment_warning_then_server_args_show_effective_values(tmp_path, sim_factory) -> None:
    sim = sim_factory([*EAGLE3, "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
                       "--speculative-num-steps", "1", "--sim-sglang-version", "0.5.4.post3", *FAST])
    sim.wait_for("server_args=")
    lines = sim.lines()
    args_at = next(i for i, line in enumerate(lines) if "server_args=ServerArgs(" in line)
    assert ADJUSTED in lines[:args_at]  # bare line, before the first timestamped one
    assert "speculative_num_draft_tokens=2," in lines[args_at]
    assert "max_running_requests=48," in lines[args_at]


def test_newest_release_logs_server_args_as_a_dict(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST])
    sim.wait_for("server_args=")
    line = next(line for line in sim.lines() if "server_args=" in line)
    assert TS.match(line) and "server_args={'model_path': '/models/meta-llama/Llama-3.1-8B-Instruct'" in line


def test_port_in_use_is_one_clear_error_exit_1() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        res = run_sim([*EAGLE3, *CHAIN3, "--port", str(port), *FAST])
    assert res.returncode == 1
    assert res.stderr.splitlines()[-1].endswith(
        f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): address already in use")


def test_bad_knob_is_one_line_exit_2() -> None:
    res = run_sim([*EAGLE3, "--sim-alpha", "1.5"])
    assert res.returncode == 2
    assert res.stderr.strip() == "spectui.sim: error: --sim-alpha must be in (0, 1), got 1.5"
    res = run_sim([*EAGLE3, "--sim-fault", "meltdown"])
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "unknown --sim-fault 'meltdown'" in res.stderr


def test_help_prints_usage_and_starts_nothing() -> None:
    res = run_sim(["--help"])
    assert res.returncode == 0
    assert res.stdout.startswith("usage: sglang serve [-h] --model-path MODEL_PATH")
    assert "server_args" not in res.stderr


def test_knobs_are_read_from_the_environment() -> None:
    # SPECTUI_SIM_SGLANG_VERSION picks the release: 0.5.6's prog is launch_server.py, the newest's `sglang serve`.
    res = run_sim([*EAGLE3, "--num-speculative-tokens", "16"], env={"SPECTUI_SIM_SGLANG_VERSION": "0.5.6.post2"})
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "launch_server.py: error: unrecognized arguments: --num-speculative-tokens 16"


def test_a_flag_overrides_the_environment() -> None:
    res = run_sim([*EAGLE3, "--num-speculative-tokens", "16", "--sim-sglang-version", "0.5.23"],
                  env={"SPECTUI_SIM_SGLANG_VERSION": "0.5.6.post2"})
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "sglang serve: error: unrecognized arguments: --num-speculative-tokens 16"


def test_a_bad_environment_value_is_one_line_naming_the_variable() -> None:
    res = run_sim([*EAGLE3, *CHAIN3], env={"SPECTUI_SIM_ALPHA": "1.5"})
    assert res.returncode == 2
    assert res.stderr.strip() == "spectui.sim: error: SPECTUI_SIM_ALPHA must be in (0, 1), got 1.5"
    res = run_sim([*EAGLE3, *CHAIN3], env={"SPECTUI_SIM_SGLANG_VERSION": "banana"})
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith("spectui.sim: error: SPECTUI_SIM_SGLANG_VERSION: ")


def test_fault_from_the_environment_reaches_the_server(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3], env={"SPECTUI_SIM_TIME_SCALE": "50", "SPECTUI_SIM_FAULT": "oom-at-capture"})
    assert sim.proc.wait(60) != 0
    assert "Capture cuda graph failed: CUDA out of memory" in sim.text()
