"""MetricsTracker (windows, DP sums, phases, launch boundaries) and Pipeline, fed by the real parser."""

from __future__ import annotations

from spectui.core.log import LogParser, MetricsTracker, Pipeline, ServerPhase


def track(lines: list[str], window: int = 200) -> MetricsTracker:
    p = LogParser()
    m = MetricsTracker(window=window)
    m.update(p.feed(lines) + p.finish())
    return m


def decode(acc: float, tps: float = 100.0, ts: str = "2025-12-03 10:00:05", tags: str = "TP0", run: int = 1,
           queue: int = 0) -> str:
    return (f"[{ts} {tags}] Decode batch, #running-req: {run}, #token: 90, token usage: 0.10, accept len: {acc:.2f}, "
            f"accept rate: 0.40, cuda graph: True, gen throughput (token/s): {tps:.2f}, #queue-req: {queue}, ")


SERVER_ARGS = "[2025-12-03 10:00:00] server_args=ServerArgs(model_path='/m', speculative_num_draft_tokens=4)"
FIRED_UP = "[2025-12-03 10:00:04] The server is fired up and ready to roll!"


def test_accept_len_stats_by_hand() -> None:
    m = track([decode(1.0 + i / 10) for i in range(10)])
    s = m.snapshot().accept_len
    # values 1.0 .. 1.9: mean 1.45; p10 at position 0.9 -> 1.09; p90 at position 8.1 -> 1.81
    assert (s.last, s.mean, s.p10, s.p90) == (1.9, 1.45, 1.09, 1.81)
    assert m.snapshot().samples == 10


def test_window_is_bounded_but_samples_count_all() -> None:
    m = track([decode(float(a)) for a in (9, 9, 9, 1, 2, 3, 4, 5)], window=5)
    snap = m.snapshot()
    assert snap.samples == 8
    assert snap.accept_len.mean == 3.0  # only the last 5: 1..5
    assert snap.accept_len.last == 5.0


def test_real_dp_ranks_are_summed_per_interval() -> None:
    # https://github.com/sgl-project/sglang/pull/6081 — DP attention, one line per DP rank
    lines = [
        "[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: "
        "2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0",
        "[2025-05-31 18:31:21 DP6 TP6] Decode batch. #running-req: 8, #token: 36267, token usage: 0.12, accept len: "
        "2.86, cuda graph: True, gen throughput (token/s): 168.28, #queue-req: 0",
        "[2025-05-31 18:31:21 DP5 TP5] Decode batch. #running-req: 8, #token: 37565, token usage: 0.13, accept len: "
        "2.94, cuda graph: True, gen throughput (token/s): 173.06, #queue-req: 0",
    ]
    snap = track(lines).snapshot()
    assert snap.gen_tokens_per_s.last == 512.35  # 171.01 + 168.28 + 173.06
    assert snap.running_req == 24
    assert len(snap.series) == 1 and snap.series[0][2] == 512.35
    assert snap.accept_len.last == 2.94 and snap.samples == 3


def test_a_repeated_rank_starts_the_next_interval() -> None:
    lines = [decode(2.0, 100, tags="DP0 TP0"), decode(2.0, 50, tags="DP1 TP1"),
             decode(2.0, 120, tags="DP0 TP0"), decode(2.0, 60, tags="DP1 TP1")]
    tps = track(lines).snapshot().gen_tokens_per_s
    assert (tps.last, tps.mean) == (180.0, 165.0)  # intervals 150 and 180


def test_phase_machine_through_a_whole_launch() -> None:
    steps = [
        (SERVER_ARGS, ServerPhase.STARTING),
        ("[2025-12-03 10:00:01 TP0] Load weight begin. avail mem=78.50 GB", ServerPhase.LOADING),
        ("[2025-12-03 10:00:02 TP0] KV Cache is allocated. #tokens: 1000, K size: 1 GB, V size: 1 GB", ServerPhase.LOADING),
        ("[2025-12-03 10:00:03 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9 GB",
         ServerPhase.CAPTURING),
        (FIRED_UP, ServerPhase.READY),
        (decode(2.0), ServerPhase.SERVING),
        ("[2025-12-03 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):", ServerPhase.SERVING),
        ("AssertionError", ServerPhase.SERVING),  # the event is emitted when the next prefixed line comes
        ("[2025-12-03 10:00:10] Received sigquit from a child process. It usually means the child failed.",
         ServerPhase.CRASHED),
    ]
    pipe = Pipeline()
    for line, phase in steps:
        assert pipe.feed_lines([line]).snapshot.phase is phase, line
    assert pipe.metrics.launches == 1


def test_launches_are_never_averaged() -> None:
    lines = [
        SERVER_ARGS, FIRED_UP, decode(3.0), decode(3.0), decode(3.0),
        # the next launch (<=0.5.10): bare resolution warnings, then its own server_args line
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
        SERVER_ARGS.replace("=4", "=2"), FIRED_UP, decode(1.5), decode(1.5),
    ]
    m = track(lines)
    first, second = m.snapshot_all()
    assert (first.launch, first.launch_first_line, first.samples, first.accept_len.mean) == (1, 1, 3, 3.0)
    assert (second.launch, second.launch_first_line, second.samples, second.accept_len.mean) == (2, 6, 2, 1.5)
    assert second.server_args == {"model_path": "/m", "speculative_num_draft_tokens": 2}
    assert m.snapshot() == second


def test_fresh_startup_after_serving_or_crash_is_a_new_launch() -> None:
    serving_then_load = [decode(2.0), "[2025-12-03 11:00:00 TP0] Load weight begin. avail mem=70 GB"]
    assert track(serving_then_load).launches == 2
    crash_then_usage = [
        "Traceback (most recent call last):", "AssertionError",
        "usage: sglang serve [-h] --model-path MODEL_PATH",
        "sglang serve: error: unrecognized arguments: --num-speculative-tokens 16",
    ]
    m = track(crash_then_usage)
    assert m.launches == 2 and m.snapshot().phase is ServerPhase.CRASHED


def test_one_rank_crashing_during_load_does_not_split_the_launch() -> None:
    lines = [
        SERVER_ARGS,
        "[2025-12-03 10:00:01 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: NCCL error: unhandled system error",
        "[2025-12-03 10:00:01 TP5] Load weight begin. avail mem=78.50 GB",
    ]
    m = track(lines)
    assert m.launches == 1 and m.snapshot().phase is ServerPhase.CRASHED


def test_shutdown_is_stopped_and_nothing_seen_is_unknown() -> None:
    assert track([FIRED_UP, decode(2.0), "[2025-12-03 11:00:00] INFO:     Shutting down"]).snapshot().phase \
        is ServerPhase.STOPPED
    assert track(["just some text"]).snapshot().phase is ServerPhase.UNKNOWN
    assert track([]).snapshot().launch == 0


class RecordingEngine:
    """A stand-in for RuleEngine in this unit test of Pipeline's wiring only."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def feed(self, records, snapshot):
        self.calls.append(("feed", [r.line for r in records]))
        return [f"d{len(self.calls)}"]

    def new_launch(self) -> None:
        self.calls.append(("new_launch", None))

    @property
    def diagnoses(self):
        return []


def test_pipeline_tells_the_engine_about_a_relaunch_at_the_right_record() -> None:
    engine = RecordingEngine()
    pipe = Pipeline(engine=engine)
    pipe.feed_lines([SERVER_ARGS, decode(2.0)])
    up = pipe.feed_lines([decode(2.0), SERVER_ARGS, decode(1.0)])
    assert up.new_launch and up.snapshot.launch == 2
    assert engine.calls == [("feed", [1, 2]), ("feed", [3]), ("new_launch", None), ("feed", [4, 5])]
    assert up.diagnoses == ("d2", "d4")


def test_a_failed_request_is_an_error_but_not_a_crash() -> None:
    lines = [
        FIRED_UP, decode(2.0),
        "[2025-12-03 10:00:07] ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/sgl/http_server.py", line 10, in generate',
        "ValueError: bad request body",
        decode(2.0),
    ]
    pipe = Pipeline()
    up = pipe.feed_lines(lines)
    (err,) = [r for r in up.records if r.__class__.__name__ == "ErrorEvent"]
    assert (err.exc_type, err.message, err.fatal) == ("ValueError", "bad request body", False)
    assert up.snapshot.phase is ServerPhase.SERVING and up.snapshot.errors == 1


def test_a_crash_loop_keeps_memory_flat_but_counts_every_launch() -> None:
    from spectui.core.log import metrics

    lines = []
    for _ in range(metrics.MAX_LAUNCHES_KEPT + 5):
        lines += ["usage: sglang serve [-h] --model-path MODEL_PATH",
                  "sglang serve: error: unrecognized arguments: --num-speculative-tokens 16"]
    m = track(lines)
    assert m.launches == metrics.MAX_LAUNCHES_KEPT + 5
    snaps = m.snapshot_all()
    assert len(snaps) == metrics.MAX_LAUNCHES_KEPT + 1
    assert snaps[-1].launch == metrics.MAX_LAUNCHES_KEPT + 5 and snaps[0].launch == 5
