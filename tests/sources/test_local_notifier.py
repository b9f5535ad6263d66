"""LocalHost's change notifier: wakes on a change (append, replacement), stays asleep on a quiet file,
and polls less once the file has been quiet a while (the idle-CPU budget of following a quiet log)."""

from __future__ import annotations

import os
from pathlib import Path

import spectui.sources.local as local
from spectui.sources.local import SharedPoll


async def test_wakes_on_append_and_on_replacement_not_on_a_quiet_file(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("first\n")
    notifier = SharedPoll(interval=0.01, idle_interval=0.05, quiet_after=10).watch(str(log))
    assert await notifier.wait(0.1) is False  # nothing changed: the timeout passes
    with log.open("a") as fh:
        fh.write("second\n")
    assert await notifier.wait(5.0) is True
    fresh = tmp_path / "server.log.new"
    fresh.write_text("x\n")
    os.replace(fresh, log)  # rotation by rename: a new inode at the path
    assert await notifier.wait(5.0) is True
    log.unlink()
    assert await notifier.wait(5.0) is True  # gone (mid-rotation): the tail re-checks identity
    await notifier.close()


async def test_a_quiet_file_is_polled_at_the_idle_interval(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "server.log"
    log.write_text("line\n")
    calls = 0
    real = local._signature

    def counting(path: str):  # counts the stat() polls
        nonlocal calls
        calls += 1
        return real(path)

    monkeypatch.setattr(local, "_signature", counting)
    quiet = SharedPoll(interval=0.02, idle_interval=0.5, quiet_after=0.0).watch(str(log))
    calls = 0
    assert await quiet.wait(1.0) is False
    assert calls <= 3  # 0.5 s steps over 1 s (not 50 polls at 20 ms)
    active = SharedPoll(interval=0.02, idle_interval=0.5, quiet_after=60.0).watch(str(log))
    calls = 0
    assert await active.wait(1.0) is False
    assert calls > 3  # changed recently: still polling fast
