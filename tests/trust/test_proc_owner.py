"""Relaunch acts as the server's owner or not at all.

A real server process owned by another local user (created with useradd when absent; the tests run as
root, here and in CI) is found in /proc: the plan names its owner; a relaunch as root is refused with
the reason and how to do it as that user, changing nothing; with --as-owner the stop and the start run
as that user through the host's own mechanism (sudo -n -u, or runuser as root without sudo), and the new
server runs as that user, with the old environment and directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from owner_kit import USER, owned_server
from owner_kit import alive as _alive
from owner_kit import health as _health
from owner_kit import uid_of as _uid_of

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.plan import Edits, build_plan
from spectui.ops.relaunch.run import RelaunchOptions, execute
from spectui.sources.discover import discover
from spectui.sources.local import LocalHost

FAST = RelaunchOptions(force=True, stop_grace_s=5, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5,
                       health_timeout_s=30)


@pytest.fixture
def owned() -> Iterator[tuple]:  # type: ignore[type-arg]
    with owned_server() as found:
        yield found


async def _plan(pid: int):  # type: ignore[no-untyped-def]
    server = next(s for s in await discover(LocalHost()) if s.pid == pid)
    return server, build_plan(server, Edits(), host_name="local", now=datetime.now())


async def test_a_server_of_another_user_is_refused_with_the_reason_and_the_way(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user, root, port, pid = owned
    server, plan = await _plan(pid)
    assert (server.uid, server.user) == (user.pw_uid, USER)
    assert f"owner    {USER} (uid {user.pw_uid})" in plan.render()
    assert plan.to_json()["owner"] == {"user": USER, "uid": user.pw_uid}
    with pytest.raises(RelaunchError) as err:
        await execute(LocalHost(), plan, FAST, history=HistoryStore(tmp_path / "h.jsonl"))
    msg = str(err.value)
    assert f"belongs to {USER} (uid {user.pw_uid})" in msg and "acts as root (uid 0)" in msg
    assert "nothing was changed" in msg and f"sudo -u {USER} spectui relaunch" in msg and "--as-owner" in msg
    assert "\n" not in msg
    assert _health(port) and _uid_of(pid) == user.pw_uid  # untouched
    assert sorted(p.name for p in root.iterdir()) == ["server.log", "stub"]  # no new log, nothing started


async def test_as_owner_stops_and_starts_it_as_that_user(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user, root, port, pid = owned
    _, plan = await _plan(pid)
    opts = RelaunchOptions(**{**{f: getattr(FAST, f) for f in FAST.__dataclass_fields__}, "as_owner": True})
    steps: list[str] = []
    result = await execute(LocalHost(), plan, opts, history=HistoryStore(tmp_path / "h.jsonl"),
                           on_progress=lambda p: steps.append(p.message))
    assert result.new.healthy, (result.message, steps)
    new = result.new.pid
    assert new is not None and new != pid and not _alive(pid)
    assert _uid_of(new) == user.pw_uid  # the owner's, not root's
    assert os.readlink(f"/proc/{new}/cwd") == str(root)
    env = dict(e.split("=", 1) for e in Path(f"/proc/{new}/environ").read_bytes().decode().split("\0") if e)
    assert env["OWNER_MARK"] == "theirs" and env["HOME"] == str(root)
    assert os.stat(plan.log_path).st_uid == user.pw_uid  # the new log is the owner's file
    assert any(f"acting as the server's owner {USER}" in m for m in steps)
