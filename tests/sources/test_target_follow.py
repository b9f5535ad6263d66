"""TARGET parsing, and follow(): tail + pipeline -> watch events on a real local file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from spectui.errors import UsageError
from spectui.sources.follow import follow
from spectui.sources.local import LocalHost
from spectui.sources.target import Target, parse_target


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("local", Target("local")),
        ("-", Target("stdin")),
        ("/var/log/s.log", Target("file", path="/var/log/s.log")),
        ("./s.log", Target("file", path="./s.log")),
        ("gpu1", Target("ssh", host="gpu1")),
        ("root@gpu1", Target("ssh", host="gpu1", user="root")),
        ("root@gpu1:2222", Target("ssh", host="gpu1", user="root", port=2222)),
        ("root@gpu1:/data/s.log", Target("ssh", host="gpu1", user="root", path="/data/s.log")),
        ("gpu1:2222:/data/s.log", Target("ssh", host="gpu1", port=2222, path="/data/s.log")),
        ("[::1]:22", Target("ssh", host="::1", port=22)),
    ],
)
def test_parse_target(text: str, target: Target) -> None:
    assert parse_target(text) == target


@pytest.mark.parametrize("text", ["a b", "gpu1:99999", "", "@host"])
def test_bad_targets_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_target(text)


def test_existing_local_file_wins_over_a_host_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.log").write_text("")
    assert parse_target("server.log") == Target("file", path="server.log")


# Real SGLang decode line, source: https://github.com/sgl-project/sglang/pull/6081
DECODE = ("[2025-05-31 18:31:21 DP5 TP5] Decode batch. #running-req: 8, #token: 37565, token usage: 0.13, "
          "accept len: 2.94, cuda graph: True, gen throughput (token/s): 173.06, #queue-req: 0")


async def test_follow_numbers_decode_events_by_file_line_across_rotation(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"start\n{DECODE}\n")
    got: list[dict] = []

    async def run() -> None:
        async for ev in follow(LocalHost(), str(log), from_start=True, raw=True):
            got.append(ev)
            if sum(e["type"] == "decode" for e in got) == 2:
                return

    task = asyncio.create_task(run())
    while not any(e["type"] == "decode" for e in got):
        await asyncio.sleep(0.02)
    os.rename(log, tmp_path / "server.log.1")
    log.write_text(f"a\nb\n{DECODE}\n")
    await asyncio.wait_for(task, 20)
    decodes = [e for e in got if e["type"] == "decode"]
    assert [d["n"] for d in decodes] == [2, 3]  # line 2 of the first file, line 3 of the new one
    assert decodes[0]["accept_len"] == 2.94 and decodes[0]["gen_tokens_per_s"] == 173.06
    conns = [e for e in got if e["type"] == "connection"]
    assert [c["state"] for c in conns] == ["connected", "connected"] and "rotated" in conns[1]["detail"]
    assert [e["text"] for e in got if e["type"] == "line"] == ["start", DECODE, "a", "b", DECODE]
