"""The multi-turn workload (bench_serving's `--dataset-name generated-shared-prefix --gsp-num-turns T`): each
conversation's turns go out in order, each turn's messages the history so far, the earlier answers
included, plus a new question; the concurrency limit counts conversations; every turn is a measured
request. Against the simulator through the CLI, and against a recording server for the exact histories."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from spectui.cli import main
from spectui.load import BenchConfig, run_bench
from spectui.load.datasets import Dataset, load_dataset

pytestmark = pytest.mark.timeout(90)

SIM = ["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
       "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
       "--sim-time-scale", "50"]


@pytest.fixture(scope="module")
def sim_port() -> Iterator[int]:
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "sim.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *SIM, "--port", str(port)], stdout=log,
                                stderr=log, cwd=tmp)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, "the simulator did not start"
                time.sleep(0.05)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


GSP = ["--dataset-name", "generated-shared-prefix", "--gsp-num-groups", "2", "--gsp-prompts-per-group", "2",
       "--gsp-system-prompt-len", "30", "--gsp-question-len", "6", "--gsp-output-len", "5"]


def test_turns_go_in_order_with_the_history_against_the_simulator(sim_port: int, capsys, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    out_file = tmp_path / "runs.jsonl"
    assert main(["bench", "local", "--server-port", str(sim_port), *GSP, "--gsp-num-turns", "3",
                 "--max-concurrency", "2", "--warmup", "1", "--ignore-eos", "--json", "--output-details",
                 "--output-file", str(out_file)]) == 0
    out = json.loads(capsys.readouterr().out)
    wl = out["workload"]
    assert wl["requests"] == 4 and wl["num_turns"] == 3 and wl["prompts"].endswith(":3turns")
    assert out["requests"]["ok"] == 12 and out["requests"]["failed"] == 0 and out["output_tokens"] == 12 * 5
    per = out["per_request"]
    assert all(r["endpoint"] == "chat" for r in per)
    convs: dict[str, list[dict]] = {}
    for r in sorted(per, key=lambda r: r["start"]):
        convs.setdefault(r["prompt"], []).append(r)
    assert len(convs) == 4 and all([r["turn"] for r in rs] == [0, 1, 2] for rs in convs.values())
    for rs in convs.values():
        for a, b in zip(rs, rs[1:], strict=False):
            assert b["start"] >= a["end"]  # a turn goes out once the answer before it is in
            # the simulator counts chars/4 + 8 per message: two more messages (the answer, the question)
            assert b["prompt_tokens"] >= a["prompt_tokens"] + 16 + 1, (a, b)
    # at most 2 conversations at a time: never more than 2 requests overlap
    events = sorted([(r["start"], 1) for r in per] + [(r["end"], -1) for r in per])
    depth = peak = 0
    for _, d in events:
        depth += d
        peak = max(peak, depth)
    assert peak <= 2
    line = json.loads(out_file.read_text().splitlines()[-1])
    assert line["completed"] == 12 and line["gsp_num_turns"] == 3 and len(line["output_lens"]) == 12


def test_the_conversations_of_a_group_share_its_system_prompt() -> None:
    base = dict(gsp_num_groups=2, gsp_prompts_per_group=2, gsp_system_prompt_len=20, gsp_question_len=5,
                gsp_output_len=4, seed=3)
    one = load_dataset(Dataset("generated-shared-prefix", 4, **base))
    three = load_dataset(Dataset("generated-shared-prefix", 4, gsp_num_turns=3, **base))
    assert one.turns == 1 and all(p.text and not p.follow_ups for p in one.prompts)
    assert three.turns == 3 and all(p.is_chat and len(p.follow_ups) == 2 for p in three.prompts)
    systems = {}
    for p in three.prompts:  # the first turn: the group's system prompt, then the first question (bench_serving's)
        (first,) = p.as_messages()
        system, question = first["content"].split("\n\n")
        systems.setdefault(p.id.split("-")[1], set()).add(system)
        assert len(system.split()) == 20 and len(question.split()) == 5
        assert all(len(q.split()) == 5 for q in p.follow_ups) and p.output_len == 4
    assert sorted(systems) == ["0", "1"] and all(len(v) == 1 for v in systems.values())
    assert systems["0"] != systems["1"]
    assert load_dataset(Dataset("generated-shared-prefix", 4, gsp_num_turns=3, **base)) == three  # seeded


@contextlib.asynccontextmanager
async def recorder(fail_on: str | None = None) -> AsyncIterator[tuple[str, list[dict]]]:
    """A chat server that records every body and answers request n with the text `answer-n` (or HTTP 500 when
    the last user message is `fail_on`)."""
    seen: list[dict] = []

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "rec", "object": "model"}]})

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        n = len(seen)
        seen.append(body)
        if fail_on is not None and body["messages"][-1]["content"] == fail_on:
            return web.json_response({"object": "error", "message": "boom"}, status=500)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i, piece in enumerate((f"answer-{n}", " end")):
            ev = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece},
                                                                  "finish_reason": "length" if i else None}],
                  "usage": {"prompt_tokens": 9, "completion_tokens": i + 1}}
            await resp.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


def _convs(n: int = 2, turns: int = 3):  # type: ignore[no-untyped-def]
    return load_dataset(Dataset("generated-shared-prefix", n, gsp_num_groups=1, gsp_prompts_per_group=n,
                                gsp_system_prompt_len=8, gsp_question_len=3, gsp_output_len=2,
                                gsp_num_turns=turns))


async def test_each_turn_sends_the_history_with_the_earlier_answers() -> None:
    prompts = _convs()
    async with recorder() as (url, seen):
        res = await run_bench(BenchConfig(url, requests=2, concurrency=1, warmup=0), prompts)
    assert [r.turn for r in res.records] == [0, 1, 2, 0, 1, 2] and all(r.ok for r in res.records)
    assert len(seen) == 6
    by_first = {b["messages"][0]["content"]: [] for b in seen}
    for b in seen:
        by_first[b["messages"][0]["content"]].append(b["messages"])
    for p in prompts.prompts:
        sent = by_first[p.as_messages()[0]["content"]]
        # request k answered `answer-k end`: each later turn carries exactly the answers before it
        first = seen.index(next(b for b in seen if b["messages"] == sent[0]))
        q1, q2 = p.follow_ups
        a0, a1 = f"answer-{first} end", f"answer-{first + 1} end"
        assert sent[0] == p.as_messages()
        assert sent[1] == [*p.as_messages(), {"role": "assistant", "content": a0}, {"role": "user", "content": q1}]
        assert sent[2] == [*sent[1], {"role": "assistant", "content": a1}, {"role": "user", "content": q2}]
    assert all(b["max_tokens"] == 2 for b in seen)  # the conversation's output length, every turn


async def test_a_failed_turn_ends_its_conversation() -> None:
    prompts = _convs(n=1, turns=3)
    async with recorder(fail_on=prompts.prompts[0].follow_ups[0]) as (url, seen):
        res = await run_bench(BenchConfig(url, requests=1, concurrency=1, warmup=0), prompts)
    assert [(r.turn, r.error) for r in res.records] == [(0, None), (1, "HTTP 500")]
    assert len(seen) == 2 and res.not_sent == 1  # the third turn was never sent
    assert res.to_json()["requests"]["not_sent"] == 1


def test_turns_without_the_shared_prefix_dataset_are_refused(capsys) -> None:
    code = main(["bench", "local", "--server-port", "1", "--gsp-num-turns", "3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "generated-shared-prefix" in err[0], err
