"""LaunchWatcher on real simulated servers: the new log is followed through one open handle (LogTail),
not re-read from the host on a timer; health by the "fired up" line or /health, a crash diagnosed."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ops_simlab import SEED_FLAGS, SIM_FAST_ENV, SimLab

from spectui.core.log import Pipeline
from spectui.core.rules import RuleEngine, load_rules
from spectui.ops.relaunch.health import LaunchWatcher
from spectui.sources.local import LocalHost


class Counting:
    """A real host, with a count of the calls the watcher makes on it (nothing else changes)."""

    def __init__(self, host: Any) -> None:
        self._host = host
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._host, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kw)

        return call


def _pipeline() -> Pipeline:
    rules, _ = load_rules()
    return Pipeline(engine=RuleEngine(rules))


async def test_over_ssh_the_log_is_read_through_one_sftp_handle(lab: SimLab, sshd, ssh_args) -> None:  # type: ignore[no-untyped-def]
    from spectui.sources.target import open_host, parse_target

    pid = lab.start(SEED_FLAGS, env={"SPECTUI_SIM_TIME_SCALE": "10", "SPECTUI_SIM_TRAFFIC": "4"})
    host = open_host(parse_target(sshd.target), ssh_args)
    await host.connect()
    counting = Counting(host)
    try:
        watcher = LaunchWatcher(counting, pid, str(lab.root / "server.log"), lab.port, "127.0.0.1",
                                pipeline=_pipeline())
        out = await watcher.wait_healthy(60)
        assert out.healthy, out
        assert out.reason in ("fired up", "GET /health 200")
        seen = watcher.offset
        observed = await watcher.observe(2)  # resumes where the wait stopped, on a new handle
    finally:
        await host.close()
    assert observed.healthy and watcher.offset > seen
    assert counting.calls["read_range"] == 0  # no re-opening the file over SFTP for every poll
    # one open per follow (`open_identified` over SSH: the handle and the identity of the file it reads)
    assert counting.calls["open"] + counting.calls["open_identified"] == 2 and counting.calls["notifier"] == 2
    assert watcher.pipeline.snapshot.samples > 0  # decode lines reached the pipeline


async def test_a_crash_is_diagnosed_with_its_whole_traceback(lab: SimLab) -> None:
    pid = lab.start([*SEED_FLAGS, "--speculative-num-steps", "3", "--speculative-num-draft-tokens", "4"],
                    env={**SIM_FAST_ENV, "SPECTUI_SIM_FAULT": "oom-at-capture"})
    host = Counting(LocalHost())
    phases: list[str] = []
    watcher = LaunchWatcher(host, pid, str(lab.root / "server.log"), lab.port, "127.0.0.1",
                            pipeline=_pipeline(), on_phase=phases.append)
    out = await watcher.wait_healthy(60)
    assert not out.healthy and out.reason in ("crashed", "exited") and out.phase == "crashed"
    # The watcher reports a phase per batch it reads: when capture began and crashed within one batch
    # (a loaded machine), "capturing" is passed over. So: it never looked up, it ended crashed, and the
    # log itself shows the crash came during capture.
    assert phases[-1] == "crashed" and not {"ready", "serving"} & set(phases), phases
    text = (lab.root / "server.log").read_text()
    assert "CUDA graph begin" in text
    assert text.index("CUDA graph begin") < text.index("Traceback (most recent call last)")
    assert any(d.category == "oom" for d in out.diagnoses), [d.rule for d in out.diagnoses]
    assert host.calls["open"] == 1
    assert host.calls["read_range"] <= 1  # at most the end of the file, once, after the follow stopped
    assert watcher.offset > 0
