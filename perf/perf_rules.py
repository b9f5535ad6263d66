"""Rule-engine cost on the live-tail path: Pipeline with the full rule library vs Pipeline without rules.

Generates a realistic 0.5.6-format log in memory (decode lines from 2 DP ranks, prefill and access lines,
a few warnings, one crash), feeds it in tail-sized batches (500 lines) and prints both times and the
ratio. Run: python perf/perf_rules.py [LINES]
"""

from __future__ import annotations

import sys
import time

from spectui.core.log import Pipeline
from spectui.core.rules import RuleEngine, load_rules


def make_log(n: int) -> list[str]:
    lines = [
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1",
        "[2025-12-03 10:00:00] server_args=ServerArgs(model_path='/m', speculative_algorithm='EAGLE3', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, max_running_requests=48)",
        "[2025-12-03 10:00:30] The server is fired up and ready to roll!",
    ]
    for i in range(n):
        s = f"{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        k = i % 20
        if k < 16:
            lines.append(f"[2025-12-03 {s} DP{k % 2} TP{k % 2}] Decode batch, #running-req: 8, #token: {1000 + i}, "
                         f"token usage: 0.05, accept len: 2.{i % 90:02d}, accept rate: 0.6{i % 10}, cuda graph: True, "
                         f"gen throughput (token/s): 3{i % 100:02d}.5, #queue-req: 0, ")
        elif k < 18:
            lines.append(f"[2025-12-03 {s} DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, "
                         "token usage: 0.05, #running-req: 7, #queue-req: 0, ")
        elif k == 18:
            lines.append(f'[2025-12-03 {s}] INFO:     127.0.0.1:5{i % 1000:03d} - "POST /generate HTTP/1.1" 200 OK')
        elif i % 1000 == 19:
            lines.append(f"[2025-12-03 {s}] KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                         "#new_token_ratio: 0.7000 -> 1.0000")
        else:
            lines.append(f"[2025-12-03 {s} DP1 TP1] Decode batch, #running-req: 8, #token: {1000 + i}, "
                         "token usage: 0.05, accept len: 2.50, cuda graph: True, gen throughput (token/s): 310.0, "
                         "#queue-req: 0, ")
    return lines


def run(lines: list[str], engine: RuleEngine | None, batch: int = 500) -> float:
    pipe = Pipeline(engine=engine)
    start = time.perf_counter()
    for i in range(0, len(lines), batch):
        pipe.feed_lines(lines[i:i + batch])
    pipe.finish()
    return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    lines = make_log(n)
    rules, errors = load_rules()
    assert not errors, errors
    base = min(run(lines, None) for _ in range(2))
    with_rules = min(run(lines, RuleEngine(rules)) for _ in range(2))
    print(f"{len(lines)} lines, {len(rules)} rules, batches of 500")
    print(f"pipeline without rules: {base:.3f} s ({len(lines) / base / 1e3:.0f}k lines/s)")
    print(f"pipeline with rules:    {with_rules:.3f} s ({len(lines) / with_rules / 1e3:.0f}k lines/s)")
    print(f"ratio: {with_rules / base:.2f}x (rule engine overhead {100 * (with_rules / base - 1):.0f}%)")
    # The engine alone on records parsed beforehand: its own cost per record, free of parser noise.
    from spectui.core.log import LogParser

    parser = LogParser()
    records = parser.feed(lines) + parser.finish()
    start = time.perf_counter()
    parse_again = LogParser()
    for i in range(0, len(lines), 500):
        parse_again.feed(lines[i:i + 500])
    parse_time = time.perf_counter() - start
    engine = RuleEngine(rules)
    start = time.perf_counter()
    for i in range(0, len(records), 500):
        engine.feed(records[i:i + 500])
    engine_time = time.perf_counter() - start
    print(f"parser alone: {1e6 * parse_time / len(lines):.1f} us/line; rule engine alone: "
          f"{1e6 * engine_time / len(records):.1f} us/record ({engine_time / parse_time:.2f}x the parser)")


if __name__ == "__main__":
    main()
