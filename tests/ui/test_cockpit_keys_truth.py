"""Small truths of the cockpit: ctrl+p opens the palette, PAUSED counts new lines, `\\` offers an empty
filter, a screenshot lands under the XDG state folder, and a host without nvidia-smi is told so once."""

from __future__ import annotations

import os
from pathlib import Path

from textual.command import CommandPalette
from ui_kit import corpus_lines, replay_app, settle

from spectui.ui.widgets.log_view import LogView


async def test_ctrl_p_opens_the_command_palette(seed_lines) -> None:
    app = replay_app(seed_lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


async def test_paused_title_counts_lines_that_arrive(seed_lines) -> None:
    app = replay_app(seed_lines[:5])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("space")
        await pilot.pause()
        log = app.dashboard.query_one(LogView)
        log.append_lines(["one more line", "and another"])
        await pilot.pause()
        assert "PAUSED (+2 new" in str(log.border_title)


async def test_backslash_offers_an_empty_filter_showing_the_current_one(seed_lines) -> None:
    app = replay_app(seed_lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("backslash")
        for ch in "Decode":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        assert app.dashboard.query_one(LogView).filter_text == "Decode"
        await pilot.press("backslash")
        await pilot.pause()
        prompt = app.dashboard.query_one("#prompt")
        assert prompt.value == "" and "(now: Decode)" in prompt.placeholder
        await pilot.press("enter")  # empty clears
        await pilot.pause()
        assert app.dashboard.query_one(LogView).filter_text == ""


async def test_screenshot_goes_to_the_state_folder(seed_lines) -> None:
    app = replay_app(seed_lines[:20])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        saved = app.deliver_screenshot()
        await pilot.pause()
    assert saved is not None
    expected = Path(os.environ["XDG_STATE_HOME"]) / "spectui" / "screenshots"
    assert Path(saved).parent == expected and Path(saved).read_text().startswith("<svg")


async def test_no_gpu_data_is_said_once() -> None:
    from spectui.sources.local import LocalHost
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session, replay_lines

    lines = corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")[:10]
    # A real local host whose PATH has no nvidia-smi (this machine has no GPU either).
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = "/nonexistent"
    try:
        session = Session(label="gpu-less", log_path="recorded.log", tail_factory=replay_lines(lines),
                          replay=True, probe_gpus=True, host=LocalHost())
        app = SpectuiApp(session, clock=lambda: 1000.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            for _ in range(50):
                await pilot.pause()
                if app.dashboard.gpu_note:
                    break
            notes = [n.message for n in app._notifications]
    finally:
        os.environ["PATH"] = old_path
    assert app.dashboard.gpu_note.startswith("no GPU strip: nvidia-smi exited 127 on gpu-less")
    assert sum("no GPU data" in m for m in notes) == 1
