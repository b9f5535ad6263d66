"""#24: the footer and `?` help list every key that works on the dashboard, and only those: b/w/i/x are
there in a live session; read-only hides relaunch and sweep (r becomes a preview, w a plan); a replay has
no bench, sweep or record, and says it is a replay (not "started with --read-only")."""

from __future__ import annotations

from textual.widgets._footer import FooterKey
from ui_kit import replay_app, settle

from spectui.sources.base import ServerProcess
from spectui.sources.local import LocalHost
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.dashboard import DashboardScreen
from spectui.ui.screens.help import HelpScreen, key_rows
from spectui.ui.session import Session, replay_lines

SERVER = ServerProcess(pid=2**22 + 7, pgid=2**22 + 7, argv=("python", "-m", "sglang.launch_server"), env={},
                       cwd="/", log_path="recorded.log", port=None, host_addr="127.0.0.1")


def live_app(lines: list[str], *, read_only: bool) -> SpectuiApp:
    """A cockpit on a real local host with a server (liveness off: the pid is made up), not a replay."""
    session = Session(label="gpu1", log_path="recorded.log", host=LocalHost(read_only=read_only), server=SERVER,
                      tail_factory=replay_lines(lines), probe_gpus=False, read_only=read_only, liveness=False)
    return SpectuiApp(session, clock=lambda: 1000.0)


def footer(app: SpectuiApp) -> dict[str, str]:
    return {k.key: k.description for k in app.screen.query(FooterKey)}


async def help_rows(pilot, app: SpectuiApp) -> list[tuple[str, str]]:
    await pilot.press("question_mark")
    await pilot.pause()
    assert isinstance(app.screen, HelpScreen)
    rows = key_rows(app.screen.off)
    text = " ".join(str(s.render()) for s in app.screen.query("Static"))
    await pilot.press("escape")
    await pilot.pause()
    return rows + [("", text)]


async def test_a_live_session_shows_every_key(seed_lines) -> None:
    app = live_app(seed_lines[:30], read_only=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        keys = footer(app)
        assert {"b", "w", "i", "x", "r", "h", "q", "question_mark", "slash", "backslash", "e"} <= set(keys)
        assert keys["r"] == "Relaunch" and keys["b"] == "Bench" and keys["x"] == "Record"
        assert max(k.region.right for k in app.screen.query(FooterKey)) <= 100  # all of it on a 100-column screen
        # space and p are named where they matter: the log title
        assert "(space pauses)" in str(app.dashboard.query_one("LogView").border_title)
        shown = [k for k, _ in await help_rows(pilot, app)]
        for key in ("b", "w", "i", "x", "p", "r", "h"):
            assert key in shown, key


async def test_read_only_hides_relaunch_and_sweep(seed_lines) -> None:
    app = live_app(seed_lines[:30], read_only=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        keys = footer(app)
        assert keys.get("r") == "Preview" and keys.get("w") == "Plan"  # what read-only leaves of them
        assert "Relaunch" not in keys.values() and "Sweep" not in keys.values()
        assert {"b", "i", "x"} <= set(keys)
        rows = await help_rows(pilot, app)
        whats = " ".join(w for _, w in rows[:-1])
        assert "edit flags, live diff and verdict, confirm" not in whats and "sweep:" not in whats
        assert "as a preview" in whats and "sweep plan:" in whats
        assert "w sweep: started with --read-only" in rows[-1][1]
        await pilot.press("r")
        await pilot.pause()
        said = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "read-only session (started with --read-only)" in said


async def test_a_replay_says_it_is_one_and_hides_what_needs_a_server(seed_lines) -> None:
    app = replay_app(seed_lines[:30], read_only=True)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        keys = footer(app)
        assert not {"b", "w", "x"} & set(keys)
        assert keys.get("r") == "Preview" and "i" in keys
        rows = await help_rows(pilot, app)
        assert not {"b", "w", "x"} & {k for k, _ in rows}
        assert "a replay of a recording" in rows[-1][1]
        await pilot.press("r")
        await pilot.pause()
        said = " ".join(str(s.render()) for s in app.screen.query("Static"))
        assert "a replay of a recording" in said and "--read-only" not in said
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("b")  # hidden, and pressed anyway: it says why instead of doing nothing
        await pilot.pause()
        assert any("bench is off in this session: no live server" in str(n.message) for n in app._notifications)


NAMES = {"f1": "F1", "slash": "/", "backslash": "\\", "question_mark": "?", "colon": ":", "home": "Home", "end": "End"}


def test_every_binding_is_in_help() -> None:
    """Each key the app and the dashboard bind (bar esc and the palette's aliases) has a help row."""
    listed = " ".join(k for k, _, _ in __import__("spectui.ui.screens.help", fromlist=["KEYS"]).KEYS).split()
    for binding in [*SpectuiApp.BINDINGS, *DashboardScreen.BINDINGS]:
        for key in binding.key.split(","):
            if key in ("escape", "ctrl+p"):
                continue
            assert NAMES.get(key, key) in listed, (key, binding.action)
