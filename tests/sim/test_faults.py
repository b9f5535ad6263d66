"""Injected faults look like SGLang's failures in the log, parse as such, and end the process like SGLang."""

from __future__ import annotations

import signal
import time

import httpx

from spectui.core.log import DecodeSample, ErrorEvent, LogParser, Milestone, MilestoneKind
from tests.sim.conftest import CHAIN3, EAGLE3

FAST = ["--sim-time-scale", "50"]


def _records(text: str) -> list:
    parser = LogParser()
    return parser.feed(text.splitlines()) + parser.finish()


def test_oom_at_capture_kills_the_launch(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--sim-fault", "oom-at-capture"])
    assert sim.proc.wait(60) == -signal.SIGKILL  # kill_process_tree(own pid): "Killed", 137 in a shell
    recs = _records(sim.text())
    errors = [r for r in recs if isinstance(r, ErrorEvent)]
    assert errors[0].headline.endswith("Scheduler hit an exception: Traceback (most recent call last):")
    assert errors[0].message.startswith("Capture cuda graph failed: CUDA out of memory.")
    assert errors[-1].message == "Received sigquit from a child process. It usually means the child failed."
    assert not any(isinstance(r, Milestone) and r.kind is MilestoneKind.FIRED_UP for r in recs)


def test_crash_after_n_requests(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--sim-fault", "crash-after", "2"])
    sim.wait_ready()
    for _ in range(3):
        try:
            httpx.post(sim.url + "/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 20}},
                       timeout=10)
        except httpx.HTTPError:
            break  # the third request finds the scheduler dead
    assert sim.proc.wait(30) == -signal.SIGKILL
    text = sim.text()
    assert "RuntimeError: CUDA error: an illegal memory access was encountered" in text
    assert text.rstrip().endswith("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    errors = [r for r in _records(text) if isinstance(r, ErrorEvent)]
    assert [e.exc_type for e in errors][:1] == ["RuntimeError"]


def test_layer_mismatch_launches_fine_but_accepts_almost_nothing(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--decode-log-interval", "10", "--sim-traffic", "4",
                       "--sim-fault", "layer-mismatch"])
    sim.wait_ready()
    deadline = time.monotonic() + 60
    while len(decodes := [r for r in _records(sim.text()) if isinstance(r, DecodeSample)]) < 8:
        assert time.monotonic() < deadline, sim.text()[-2000:]
        time.sleep(0.05)
    assert "type=LlamaForCausalLMEagle3" in sim.text()  # the draft loaded normally
    mean = sum(d.accept_len for d in decodes) / len(decodes)  # type: ignore[misc]
    assert 1.0 <= mean <= 1.25
    assert sim.stop() == 0


def test_nccl_timeout_fires_the_watchdog(sim_factory) -> None:
    sim = sim_factory([*EAGLE3, *CHAIN3, *FAST, "--tp-size", "2", "--sim-traffic", "4",
                       "--sim-fault", "nccl-timeout"])
    assert sim.proc.wait(60) == -signal.SIGKILL
    text = sim.text()
    assert "Watchdog caught collective operation timeout: WorkNCCL(" in text
    assert text.rstrip().endswith("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    assert "TP1] Load weight end." in text  # both ranks log start-up with their TP tag
