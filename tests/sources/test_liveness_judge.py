"""HealthJudge, pure: quiet is not stuck; stuck has a reason; starting is not judged; gone is gone."""

from __future__ import annotations

from spectui.sources.base import ServerProcess
from spectui.sources.liveness import Activity, HealthJudge, LivenessConfig, successor_score

CFG = LivenessConfig(unhealthy_after=3.0, log_quiet_after=5.0)


def judge() -> HealthJudge:
    return HealthJudge(CFG, 0.0, 42)


def test_starting_is_not_judged_until_the_server_is_up() -> None:
    j = judge()
    j.process(0.0, "S")
    assert j.judge(100.0, Activity(phase="loading")) is None  # /health silent while loading: normal
    j.health(101.0, 200)
    assert j.judge(101.0, Activity(phase="serving")).state == "healthy"


def test_no_health_answer_past_the_threshold_is_unhealthy_and_says_how_long() -> None:
    j = judge()
    j.health(1.0, 200)
    j.health(2.0, None, "timed out")
    assert j.judge(3.5, Activity()).state == "healthy"
    v = j.judge(4.5, Activity())
    assert v.state == "unhealthy" and v.reason == "no /health answer for 3 s" and v.kind == "health"
    j.health(5.0, 503)
    assert "/health answered 503" in j.judge(6.0, Activity()).reason


def test_a_log_that_went_up_makes_health_expected() -> None:
    j = judge()
    assert j.judge(10.0, Activity(phase="ready")).state == "healthy"  # up from now: silence counts from here
    assert j.judge(14.0, Activity(phase="ready")).state == "unhealthy"


def test_quiet_idle_is_healthy_but_quiet_with_requests_running_is_not() -> None:
    j = judge()
    j.health(100.0, 200)
    assert j.judge(100.0, Activity(last_line_at=10.0, running=0, queued=0, phase="serving")).state == "healthy"
    v = j.judge(100.0, Activity(last_line_at=90.0, running=3, queued=2, phase="serving"))
    assert v.state == "unhealthy" and v.kind == "log" and "3 running, 2 queued" in v.reason
    j.generate_ok = True  # /health_generate answered: it is making progress after all
    assert j.judge(100.0, Activity(last_line_at=90.0, running=3, queued=2, phase="serving")).state == "healthy"


def test_stopped_process_and_gone_process() -> None:
    j = judge()
    j.health(0.0, 200)
    j.process(0.5, "T")
    v = j.judge(3.5, Activity())
    assert v.state == "unhealthy" and "SIGSTOP" in v.reason
    j.health(4.0, 200)  # SIGCONT landed between the two probes of a round
    assert j.judge(4.0, Activity()).state == "healthy"
    j.process(5.0, None)
    v = j.judge(5.0, Activity())
    assert v.state == "gone" and "42" in v.reason and v.to_event()["type"] == "health"


def test_thresholds_from_the_environment() -> None:
    cfg = LivenessConfig.from_env({"SPECTUI_UNHEALTHY_AFTER": "3", "SPECTUI_LOG_QUIET_AFTER": "bad"})
    assert cfg.unhealthy_after == 3.0 and cfg.log_quiet_after == 30.0 and cfg.probe_timeout <= 1.0
    assert LivenessConfig.from_env({}).unhealthy_after == 10.0


def proc(pid: int, argv: tuple[str, ...], log: str, port: int = 30000, cwd: str = "/w") -> ServerProcess:
    return ServerProcess(pid=pid, pgid=pid, argv=argv, env={}, cwd=cwd, log_path=log, port=port,
                         host_addr="127.0.0.1", program="python -m sglang.launch_server")


def test_successor_matching() -> None:
    old = proc(1, ("python", "-m", "sglang.launch_server", "--model-path", "/m", "--speculative-num-steps", "3"),
               "/logs/a.log")
    edited = proc(2, ("python", "-m", "sglang.launch_server", "--model-path", "/m", "--speculative-num-steps", "5"),
                  "/logs/a.relaunch-1.log")
    moved_port = proc(3, old.argv, "/logs/b.log", port=31000)
    other = proc(4, ("python", "-m", "sglang.launch_server", "--model-path", "/other"), "/elsewhere/x.log",
                 port=31001)
    assert successor_score(old, edited) > successor_score(old, moved_port) > 0
    assert successor_score(old, other) == 0
    assert successor_score(old, old) == 0
