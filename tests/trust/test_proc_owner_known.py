"""Relaunch acts as the server's owner or not at all — in a dry run, for a gone server started again, and
in the cockpit (#26).

Real processes owned by another local user (owner_kit: useradd, setpriv). A dry run of a relaunch that
would be refused says so — the same reason and the same way to do it as that user — and exits 1 as the
real run does. A server that is gone (killed: a crash) and is started again from what is known of it (the
cockpit's discovery, the launch history, the log) is started as its last owner or not at all. The
cockpit's relaunch screen shows the refusal in full."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from owner_kit import USER, alive, health, kill_group, owned_server, uid_of

from spectui.errors import RelaunchError
from spectui.ops.history import HistoryStore
from spectui.ops.relaunch.known import find_known, known_of
from spectui.ops.relaunch.plan import Edits
from spectui.ops.relaunch.run import RelaunchOptions, execute, prepare_any, start_known
from spectui.sources.discover import discover
from spectui.sources.local import LocalHost

FAST = RelaunchOptions(force=True, stop_grace_s=5, kill_wait_s=5, port_timeout_s=10, gpu_timeout_s=5,
                       health_timeout_s=30)
AS_OWNER = RelaunchOptions(**{**{f: getattr(FAST, f) for f in FAST.__dataclass_fields__}, "as_owner": True})


@pytest.fixture
def owned() -> Iterator[tuple]:  # type: ignore[type-arg]
    with owned_server() as found:
        yield found


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "spectui", "relaunch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd="/")


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


async def test_a_dry_run_says_the_refusal_and_exits_as_the_real_run(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user, root, port, pid = owned
    # the dry runs at once (each is a whole CLI start-up and discovery)
    text, js, text_owner = (_cli("local", "--pid", str(pid), "--dry-run", *extra)
                            for extra in ((), ("--json",), ("--as-owner",)))
    outs = [p.communicate(timeout=120) for p in (text, js, text_owner)]
    (t_out, t_err), (j_out, j_err), (to_out, to_err) = outs

    # what the real run refuses with, from the relaunch itself (not from the dry run's code path)
    server = next(s for s in await discover(LocalHost()) if s.pid == pid)
    from spectui.ops.relaunch.plan import build_plan

    with pytest.raises(RelaunchError) as real:
        await execute(LocalHost(), build_plan(server, Edits(), host_name="local", now=datetime.now()), FAST,
                      history=HistoryStore(tmp_path / "h.jsonl"))
    reason = str(real.value)
    assert f"belongs to {USER} (uid {user.pw_uid})" in reason and f"sudo -u {USER} spectui relaunch" in reason

    assert text.returncode == 1, (t_out[-500:], t_err)
    assert f"owner    {USER} (uid {user.pw_uid})" in t_out  # the plan shows the owner
    assert t_err.strip().splitlines() == [f"spectui relaunch: {reason}"]  # the same reason, one line

    assert js.returncode == 1, j_err
    dry = json.loads(j_out)
    assert dry["dry_run"] is True and dry["refused"] == reason
    assert dry["owner"] == {"user": USER, "uid": user.pw_uid}
    assert j_err.strip().splitlines() == [f"spectui relaunch: {reason}"]

    # --as-owner: the host's sudo/runuser can act as the owner, so the real run would go on
    assert text_owner.returncode == 0 and to_err == "", to_err
    prefix = next(line for line in to_out.splitlines() if line.startswith("as owner "))
    assert f"run as {USER} through `" in prefix and f" -u {USER} --` (--as-owner)" in prefix, prefix

    assert health(port) and uid_of(pid) == user.pw_uid and _files(root) == ["server.log", "stub"]  # untouched


async def test_a_gone_server_is_started_again_as_its_owner_or_not_at_all(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The cockpit's path: what it discovered while the server ran (owner included); then the history."""
    user, root, port, pid = owned
    host, store = LocalHost(), HistoryStore(tmp_path / "h.jsonl")
    server = next(s for s in await discover(host) if s.pid == pid)
    known = known_of(server)
    assert (known.uid, known.user) == (user.pw_uid, USER)
    kill_group(pid)

    with pytest.raises(RelaunchError) as err:
        await start_known(host, known, options=FAST, history=store)
    msg = str(err.value)
    assert f"the last server (pid {pid}) on local ran as {USER} (uid {user.pw_uid})" in msg, msg
    assert "acts as root (uid 0)" in msg and "nothing was changed" in msg and "\n" not in msg
    assert f"start it again as its owner (`sudo -u {USER} spectui relaunch ...`)" in msg and "--as-owner" in msg
    assert not health(port) and _files(root) == ["server.log", "stub"]  # nothing started, no new log

    steps: list[str] = []
    result = await start_known(host, known, options=AS_OWNER, history=store,
                               on_progress=lambda p: steps.append(p.message))
    assert result.new.healthy, (result.message, steps)
    new = result.new.pid
    assert new is not None and uid_of(new) == user.pw_uid and os.readlink(f"/proc/{new}/cwd") == str(root)
    assert os.stat(result.new.log).st_uid == user.pw_uid  # type: ignore[arg-type]
    record = store.read()[-1]
    assert (record.owner_uid, record.owner_user) == (user.pw_uid, USER)  # kept for the next start

    # gone again: started again from the launch history, whose record names the owner
    kill_group(new)
    plan = await prepare_any(host, Edits(), pid=new, history=store)
    assert plan.from_known and "launch history" in plan.known_note
    assert (plan.server.uid, plan.server.user) == (user.pw_uid, USER)
    assert f"owner    {USER} (uid {user.pw_uid})" in plan.render()
    with pytest.raises(RelaunchError, match=f"the last server \\(pid {new}\\) on local ran as {USER}"):
        await execute(host, plan, FAST, history=store)
    assert not alive(new) and not health(port)


async def test_the_log_of_a_gone_server_names_its_owner(owned, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Nothing but the log is known (no history): its owner is the server's (its redirection created it)."""
    user, root, port, pid = owned
    host, store = LocalHost(), HistoryStore(tmp_path / "h.jsonl")
    kill_group(pid)
    log = str(root / "server.log")
    known = await find_known(host, log=log, history=store)
    assert known is not None and "server_args= line" in known.source
    assert (known.uid, known.user) == (user.pw_uid, USER) and "the owner of its log" in known.env_note
    plan = await prepare_any(host, Edits(), log=log, history=store)
    assert plan.from_known and plan.to_json()["owner"] == {"user": USER, "uid": user.pw_uid}
    with pytest.raises(RelaunchError, match=f"ran as {USER} \\(uid {user.pw_uid}\\).*--as-owner"):
        await execute(host, plan, FAST, history=store)
    assert not health(port) and _files(root) == ["server.log", "stub"]


async def test_the_cockpit_relaunch_screen_shows_the_refusal_in_full(owned, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from textual.geometry import Region

    from spectui.core.launch import parse_command
    from spectui.ui.app import SpectuiApp
    from spectui.ui.screens.relaunch import RelaunchScreen
    from spectui.ui.session import Session

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    user, root, port, pid = owned
    host = LocalHost()
    server = next(s for s in await discover(host) if s.pid == pid)
    session = Session(label="local", log_path=server.log_path, host=host, server=server,
                      launch=parse_command(list(server.argv)), server_port=server.port, probe_gpus=False)
    app = SpectuiApp(session)

    def painted(screen: RelaunchScreen) -> str:
        w = screen.query_one("#progress")
        return "\n".join(s.text for s in w.render_lines(Region(0, 0, w.size.width, w.size.height)))

    async def refused(screen: RelaunchScreen, pilot) -> str:  # type: ignore[no-untyped-def]
        screen.error = None
        await pilot.press("ctrl+s", "ctrl+s")  # arm, confirm
        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        while screen.running or screen.error is None:
            assert loop.time() < end, painted(screen)
            await pilot.pause(0.1)
        await pilot.pause()
        return " ".join(line.strip() for line in painted(screen).splitlines())  # the wrapped lines, joined

    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RelaunchScreen)
        shown = await refused(screen, pilot)
        assert f"✗ relaunch failed: pid {pid} on local belongs to {USER} (uid {user.pw_uid})" in shown, shown
        assert "acts as root (uid 0)" in shown and "nothing was changed" in shown
        # the way to do it, whole (not cut at the box's edge)
        assert f"→ relaunch it as its owner (`sudo -u {USER} spectui relaunch ...`), or pass --as-owner" in shown
        assert shown.rstrip().endswith("press Relaunch to plan again from what runs now"), shown
        assert health(port) and uid_of(pid) == user.pw_uid

        kill_group(pid)  # it crashes: the next confirmation starts it again from what the cockpit knows
        shown = await refused(screen, pilot)
        assert f"the last server (pid {pid}) on local ran as {USER} (uid {user.pw_uid})" in shown, shown
        assert "start it again as its owner" in shown
        assert not health(port) and _files(root) == ["server.log", "stub"]
        await pilot.press("escape")


async def test_over_ssh_the_refusal_says_to_log_in_as_the_owner(owned, sshd, ssh_args, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Through the real sshd (logged in as root): the dry run and a gone server's start are refused, and the
    way to do it is to connect as the owner."""
    from spectui.sources.target import open_host, parse_target

    user, root, port, pid = owned
    way = f"`spectui relaunch {USER}@127.0.0.1:{sshd.port} ...`"
    dry = _cli(sshd.target, "--pid", str(pid), "--dry-run", "--ssh-config", "/dev/null", "-i", str(sshd.client_key),
               "--known-hosts", str(sshd.known_hosts))
    out, err = dry.communicate(timeout=120)
    assert dry.returncode == 1, (out[-500:], err)
    assert f"owner    {USER} (uid {user.pw_uid})" in out
    (line,) = err.strip().splitlines()
    assert f"pid {pid} on " in line and f"belongs to {USER} (uid {user.pw_uid})" in line, line
    assert "acts as root (uid 0)" in line and f"relaunch it as its owner ({way})" in line

    host = open_host(parse_target(sshd.target), ssh_args)
    await host.connect()
    try:
        kill_group(pid)
        log = str(root / "server.log")
        plan = await prepare_any(host, Edits(), log=log, history=HistoryStore(tmp_path / "h.jsonl"))
        assert plan.from_known and (plan.server.uid, plan.server.user) == (user.pw_uid, USER)  # its log's owner
        with pytest.raises(RelaunchError) as refused:
            await execute(host, plan, FAST, history=HistoryStore(tmp_path / "h.jsonl"))
        assert f"ran as {USER} (uid {user.pw_uid})" in str(refused.value) and way in str(refused.value)
    finally:
        await host.close()
    assert not health(port) and _files(root) == ["server.log", "stub"]
