"""LogTail on LocalHost against real files: offsets, partial lines, backfill, rotation, truncation."""

from __future__ import annotations

import os
from pathlib import Path

from tailhelp import Collected, running, wait_for

from spectui.sources.base import ConnState
from spectui.sources.local import LocalHost
from spectui.sources.tail import LogTail


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:  # reopened per write, like a logger that survives rotation
        f.write(text)


async def test_from_start_holds_partial_line_until_newline(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("one\ntwo\nthr")
    out = Collected()
    async with running(LogTail(LocalHost(), str(log), from_start=True), out):
        await wait_for(out, lambda o: len(o.lines) == 2)
        assert out.lines == ["one", "two"]
        append(log, "ee\r\nfour\n")
        await wait_for(out, lambda o: len(o.lines) == 4)
    assert out.lines == ["one", "two", "three", "four"]
    assert out.numbers == [1, 2, 3, 4]


async def test_backfill_gives_last_lines_with_file_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"l{i}\n" for i in range(1, 1001)) + "part")
    out = Collected()
    tail = LogTail(LocalHost(), str(log), backfill_lines=5)
    async with running(tail, out):
        await wait_for(out, lambda o: len(o.backfill) == 5)
        append(log, "ial\nnext\n")
        await wait_for(out, lambda o: len(o.lines) == 2)
    assert out.backfill == ["l996", "l997", "l998", "l999", "l1000"]
    assert out.lines == ["partial", "next"]
    assert out.numbers == [1001, 1002]


async def test_rename_rotation_and_copytruncate_lose_and_repeat_nothing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    out = Collected()
    async with running(LogTail(LocalHost(), str(log), from_start=True), out):
        await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
        for i in range(100):
            append(log, f"a{i}\n")
        await wait_for(out, lambda o: len(o.lines) == 100)
        os.rename(log, tmp_path / "server.log.1")
        for i in range(100):
            append(log, f"b{i}\n")
        await wait_for(out, lambda o: len(o.lines) == 200)
        os.truncate(log, 0)  # copytruncate: the copy was made, the file shrinks to 0
        await wait_for(out, lambda o: sum(s.rotated for s in o.states) == 2)
        for i in range(50):
            append(log, f"c{i}\n")
        await wait_for(out, lambda o: len(o.lines) == 250)
    expected = [f"a{i}" for i in range(100)] + [f"b{i}" for i in range(100)] + [f"c{i}" for i in range(50)]
    assert out.lines == expected
    assert out.numbers[100] == 1 and out.numbers[200] == 1  # numbering restarts in each new file


async def test_missing_file_says_so_then_follows_when_it_appears(tmp_path: Path) -> None:
    log = tmp_path / "late.log"
    out = Collected()
    async with running(LogTail(LocalHost(), str(log), from_start=True, missing_retry=0.05), out):
        await wait_for(out, lambda o: bool(o.states))
        assert "missing" in out.states[0].detail and str(log) in out.states[0].detail
        log.write_text("hello\n")
        await wait_for(out, lambda o: o.lines == ["hello"])


async def test_launch_header_is_the_current_launchs_server_args_line_before_the_backfill(tmp_path: Path) -> None:
    # Two launches in one log; the second's server_args line is far before the last 5 lines.
    first = "[2026-12-01 10:00:00] server_args=ServerArgs(speculative_num_steps=1, speculative_num_draft_tokens=2)\n"
    second = "[2026-12-01 11:00:00] server_args=ServerArgs(speculative_num_steps=3, speculative_num_draft_tokens=4)\n"
    body = "".join(f"l{i}\n" for i in range(1, 51))
    log = tmp_path / "server.log"
    log.write_text("start\n" + first + body + "restart\n" + second + body)  # second's line is line 54
    events = []
    async for ev in LogTail(LocalHost(), str(log), backfill_lines=5, launch_header=True):
        events.append(ev)
        if getattr(ev, "lines", None) and not getattr(ev, "header", False):
            break
    lines = [ev for ev in events if hasattr(ev, "lines")]
    assert [(ev.first_line, ev.lines, ev.header) for ev in lines] == [
        (54, (second.rstrip("\n"),), True),
        (100, ("l46", "l47", "l48", "l49", "l50"), False),  # lines 55-104 are the body
    ]

    # The server_args line inside the backfill: no header of its own; without launch_header: none either.
    for tail in (LogTail(LocalHost(), str(log), backfill_lines=60, launch_header=True),
                 LogTail(LocalHost(), str(log), backfill_lines=5)):
        async for ev in tail:
            if getattr(ev, "lines", None):
                assert not ev.header and ev.backfill
                break
