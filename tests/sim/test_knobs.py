"""The simulator's knobs: SPECTUI_SIM_* variables, `--sim-*` flags over them, one-line errors naming either."""

from __future__ import annotations

import pytest

from spectui.sim.faults import Fault, KnobError
from spectui.sim.knobs import ENV_KNOBS, KNOB_HELP, SimKnobs, env_name, knob_len, split_argv

FLAGS = ["--model-path", "/m", "--tp", "2"]


def test_one_variable_per_knob() -> None:
    assert list(ENV_KNOBS.values()) == list(KNOB_HELP)
    assert env_name("--sim-time-scale") == "SPECTUI_SIM_TIME_SCALE"
    assert {"SPECTUI_SIM_FAULT", "SPECTUI_SIM_ALPHA", "SPECTUI_SIM_SGLANG_VERSION", "SPECTUI_SIM_BASELINE_TPS",
            "SPECTUI_SIM_TRAFFIC", "SPECTUI_SIM_OUTPUT_LEN", "SPECTUI_SIM_CONCURRENCY", "SPECTUI_SIM_MODEL_ARCH",
            "SPECTUI_SIM_SEED"} < set(ENV_KNOBS)


def test_knob_len_counts_the_words_of_a_knob() -> None:
    assert knob_len(["--sim-seed=5", "--tp"], 0) == 1
    assert knob_len(["--sim-seed", "5", "--tp"], 0) == 2
    assert knob_len(["--sim-fault", "crash-after", "3", "--tp"], 0) == 3
    assert knob_len(["--sim-fault=crash-after", "3"], 0) == 2
    assert knob_len(["--sim-fault", "oom-at-capture", "3"], 0) == 2  # only crash-after takes a count
    assert knob_len(["--tp", "--sim-seed"], 1) == 1  # no value left: split_argv says so


def test_argv_knobs_are_split_out_in_every_form() -> None:
    for argv in (["--sim-fault=crash-after", "3", "--tp", "2"], ["--tp", "2", "--sim-fault", "crash-after", "3"],
                 ["--sim-fault", "crash-after:3", "--tp", "2"]):
        rest, knobs = split_argv(argv)
        assert rest == ["--tp", "2"] and knobs.fault == Fault("crash-after", 3)
    assert split_argv(FLAGS) == (FLAGS, SimKnobs())  # SGLang's flags alone: a plain demo server


def test_environment_knobs_are_read() -> None:
    env = {"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_FAULT": "crash-after 3", "SPECTUI_SIM_ALPHA": "0.6",
           "SPECTUI_SIM_SGLANG_VERSION": "0.5.6", "SPECTUI_SIM_TRAFFIC": "4", "PATH": "/bin",
           "SPECTUI_SIM_SEED": ""}  # an empty variable counts as unset
    rest, knobs = split_argv(FLAGS, env)
    assert rest == FLAGS
    assert knobs == SimKnobs(sglang_version="0.5.6", time_scale=40.0, alpha=0.6, traffic_rps=4.0,
                             fault=Fault("crash-after", 3))
    assert split_argv([], {"SPECTUI_SIM_FAULT": "crash-after:2"})[1].fault == Fault("crash-after", 2)
    assert split_argv([], {"SPECTUI_SIM_FAULT": " oom-at-capture "})[1].fault == Fault("oom-at-capture")


def test_argv_overrides_the_environment() -> None:
    env = {"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_ALPHA": "1.5"}  # a bad value the flag replaces
    _, knobs = split_argv(["--sim-alpha", "0.7", *FLAGS, "--sim-time-scale=2"], env)
    assert knobs.alpha == 0.7 and knobs.time_scale == 2.0


@pytest.mark.parametrize(("env", "message"), [
    ({"SPECTUI_SIM_ALPHA": "1.5"}, "SPECTUI_SIM_ALPHA must be in (0, 1), got 1.5"),
    ({"SPECTUI_SIM_TIME_SCALE": "fast"}, "SPECTUI_SIM_TIME_SCALE expects a number, got 'fast'"),
    ({"SPECTUI_SIM_TRAFFIC": "-1"}, "SPECTUI_SIM_TRAFFIC must be >= 0, got -1"),
    ({"SPECTUI_SIM_FAULT": "meltdown"}, "unknown SPECTUI_SIM_FAULT value 'meltdown'; choose from: oom-at-capture"),
    ({"SPECTUI_SIM_FAULT": "crash-after"},
     "SPECTUI_SIM_FAULT=crash-after needs a request count, e.g. SPECTUI_SIM_FAULT='crash-after 3'"),
    ({"SPECTUI_SIM_TIMESCALE": "4"}, "unknown simulator knob variable SPECTUI_SIM_TIMESCALE; known: "),
])
def test_a_bad_environment_value_is_one_line_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(KnobError) as exc:
        split_argv(FLAGS, env)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)


def test_bad_flag_messages_are_unchanged() -> None:
    with pytest.raises(KnobError, match=r"^--sim-alpha must be in \(0, 1\), got 1.5$"):
        split_argv(["--sim-alpha", "1.5"], {"SPECTUI_SIM_ALPHA": "0.5"})
    with pytest.raises(KnobError, match="^unknown --sim-fault 'meltdown'"):
        split_argv(["--sim-fault", "meltdown"])
    with pytest.raises(KnobError, match="^--sim-seed needs a value$"):
        split_argv(["--tp", "2", "--sim-seed"])
