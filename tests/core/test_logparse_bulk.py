"""The bulk reader of `spectui check` gives the same counts, events and metrics as line-by-line parsing."""

from __future__ import annotations

import random

import pytest

from spectui.core.log import DecodeSample, ErrorEvent, Milestone, Pipeline, WarningEvent

STARTUP = [
    "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting "
    "--max-running-requests.",
    "[2026-01-05 10:00:00] server_args=ServerArgs(model_path='/m', dp_size=2, speculative_num_draft_tokens=4)",
    "[2026-01-05 10:00:01 DP0 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-01-05 10:00:02 DP0 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9 GB",
    "[2026-01-05 10:00:03] The server is fired up and ready to roll!",
]
RARE = [
    "[2026-01-05 10:00:09 DP1 TP2] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: "
    "0.4 -> 0.6",
    '[2026-01-05 10:00:09] INFO:     127.0.0.1:4000 - "GET /nothing HTTP/1.1" 404 Not Found',
    "[2026-01-05 10:00:09 DP0 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/scheduler.py", line 10, in run',
    "ValueError: boom",
    "a stray line without any prefix",
]


def make_log(seed: int, n: int) -> bytes:
    rng = random.Random(seed)
    out = list(STARTUP)
    for i in range(n):
        ts = f"2026-01-05 {10 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        r = rng.random()
        dp = i % 2
        if r < 0.0005:
            out.extend(RARE)
        elif r < 0.0006:
            out.extend(STARTUP)  # a relaunch
        elif r < 0.75:
            acc = 1 + rng.random() * 2
            out.append(f"[{ts} DP{dp} TP{dp * 2}] Decode batch, #running-req: {rng.randint(1, 48)}, #token: 9, "
                       f"token usage: 0.10, accept len: {acc:.2f}, accept rate: 0.50, cuda graph: True, "
                       f"gen throughput (token/s): {rng.uniform(50, 300):.2f}, #queue-req: {rng.randint(0, 3)}, ")
        elif r < 0.88:
            out.append(f"[{ts} DP{dp} TP{dp * 2}] Prefill batch, #new-seq: 1, #new-token: 60, #cached-token: 0, "
                       f"token usage: 0.10, #running-req: 3, #queue-req: 0, ")
        else:
            out.append(f'[{ts}] INFO:     127.0.0.1:{rng.randint(1000, 9999)} - "POST /generate HTTP/1.1" 200 OK')
    return ("\n".join(out) + "\n").encode()


def run(data: bytes, *, bulk: bool, chunk: int) -> tuple[Pipeline, list]:
    pipe = Pipeline(bulk=bulk, window=50)
    recs: list = []
    for i in range(0, len(data), chunk):
        recs += pipe.feed_bytes(data[i : i + chunk]).records
    recs += pipe.finish().records
    return pipe, recs


def summary(pipe: Pipeline, recs: list) -> dict:
    events = [(type(r).__name__, r.line, getattr(r, "exc_type", getattr(r, "kind", None)))
              for r in recs if isinstance(r, ErrorEvent | Milestone | WarningEvent)]
    launches = [(s.launch, s.launch_first_line, s.phase, s.samples, s.prefill_samples, s.accept_len,
                 s.accept_rate, s.gen_tokens_per_s, s.running_req, s.queue_req, s.errors, s.warnings, s.series,
                 s.token_usage, s.graph, s.server_args)
                for s in pipe.metrics.snapshot_all()]
    return {"lines": pipe.parser.lines_seen, "counts": dict(pipe.parser.counts), "events": events,
            "launches": launches}


@pytest.mark.parametrize(("seed", "chunk"), [(1, 1 << 16), (2, 8 << 20), (3, 300_001)])
def test_bulk_equals_line_by_line(seed: int, chunk: int) -> None:
    data = make_log(seed, 20_000)
    slow = summary(*run(data, bulk=False, chunk=1 << 20))
    fast_pipe, fast_recs = run(data, bulk=True, chunk=chunk)
    fast = summary(fast_pipe, fast_recs)
    assert fast == slow
    lines = [r.line for r in fast_recs]
    assert lines == sorted(lines)  # records come in stream order
    assert len(slow["launches"]) > 1 and slow["counts"]["error"] > 0  # the data did exercise relaunches and errors
    # bulk really skipped work: far fewer decode records than decode lines
    assert sum(isinstance(r, DecodeSample) for r in fast_recs) < fast_pipe.parser.counts["decode"]


def test_bulk_on_a_log_without_rare_lines_keeps_first_line_and_tail() -> None:
    lines = [f"[2026-01-05 10:00:{i % 60:02d} TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.10, "
             f"accept len: {1 + (i % 10) / 10:.2f}, cuda graph: True, gen throughput (token/s): 100.00, "
             f"#queue-req: 0, " for i in range(5000)]
    data = ("\n".join(lines) + "\n").encode()
    slow_pipe, _ = run(data, bulk=False, chunk=1 << 20)
    fast_pipe, recs = run(data, bulk=True, chunk=1 << 20)
    assert summary(fast_pipe, recs) == summary(slow_pipe, [])
    assert fast_pipe.snapshot.launch_first_line == 1
    assert recs[-1].skipped_decode + len(recs) == 5000


def test_bulk_with_crlf_and_many_dp_ranks() -> None:
    # 8 DP ranks print one line each per interval, in an order that varies (as in real DP-attention logs)
    rng = random.Random(5)
    order: list[int] = []
    lines = []
    for i in range(6000):
        if not order:
            order = rng.sample(range(8), 8)
        dp = order.pop()
        lines.append(f"[2026-01-05 10:{i // 480 % 60:02d}:{i // 8 % 60:02d} DP{dp} TP{dp}] Decode batch, "
                     f"#running-req: {i % 7}, #token: 9, token usage: 0.10, accept len: {1 + i % 13 / 10:.2f}, "
                     f"cuda graph: True, gen throughput (token/s): {10 + i % 17:.2f}, #queue-req: 0")
        if i == 3000:
            lines.append("[2026-01-05 10:30:00] Overlap schedule is not implemented for speculative decoding on CPU.")
    data = ("\r\n".join(lines) + "\r\n").encode()
    slow = summary(*run(data, bulk=False, chunk=1 << 20))
    fast_pipe, fast_recs = run(data, bulk=True, chunk=1 << 18)
    assert summary(fast_pipe, fast_recs) == slow
    assert slow["counts"]["decode"] == 6000


def _restyle(data: bytes, every: int) -> bytes:
    """Every `every`-th line in the forms the long (FAST) marks miss: SGLang's older "Decode batch." /
    "Prefill batch." and an HTTP/1.0 access line (the plain marks still find them)."""
    lines = data.split(b"\n")
    for i in range(0, len(lines), every):
        lines[i] = (lines[i].replace(b"Decode batch,", b"Decode batch.").replace(b"Prefill batch,", b"Prefill batch.")
                    .replace(b'HTTP/1.1" 200 OK', b'HTTP/1.0" 200 OK'))
    return b"\n".join(lines)


def _merged(segs: list) -> list:
    """Segments with neighbouring ordinary ones joined: which lines are counted and which are read."""
    out: list = []
    for seg in segs:
        if out and seg[0] and out[-1][0] and out[-1][2] == seg[1]:
            last = out[-1]
            out[-1] = (True, last[1], seg[2], last[3] + seg[3], last[4] + seg[4], last[5] + seg[5])
        else:
            out.append(seg)
    return out


@pytest.mark.parametrize("every", [1, 3, 997])
def test_long_marks_count_what_the_plain_marks_count(every: int) -> None:
    from spectui.core.log import bulk

    data = _restyle(make_log(21, 20_000), every)
    begin, end = 0, data.rindex(b"\n") + 1
    plain: list = []
    bulk._segments(data, begin, end, bulk.BLOCK, plain, bulk.BASE_MARKS, None)
    assert _merged(bulk.segments(data, begin, end)) == _merged(plain)  # same lines counted, same lines read
    assert sum(s[4] for s in plain) > 10_000  # the data was mostly counted, not read line by line
    slow = summary(*run(data, bulk=False, chunk=1 << 20))
    assert summary(*run(data, bulk=True, chunk=1 << 18)) == slow
