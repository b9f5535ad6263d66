"""The cockpit's look, pinned: SVG snapshots of a recorded simulator run (fixed clock, fixed data).

Reviewed by eye before acceptance (`pytest --snapshot-update`, then open tests/ui/__snapshots__/*.svg).
"""

from __future__ import annotations

from pathlib import Path

from ui_kit import replay_app, settle

from spectui.core.launch import parse_command
from spectui.ui.session import read_recorded_log

RECORDED = Path(__file__).parent / "data" / "silent-override-sim.log"


def seed_app():
    header = RECORDED.read_text().splitlines()[:3]
    launch = parse_command(next(h for h in header if h.startswith("# launch: "))[len("# launch: "):])
    return replay_app(read_recorded_log(str(RECORDED)), label="gpu1", launch=launch, version="0.5.23")


async def _settled(pilot) -> None:
    await settle(pilot, pilot.app)
    pilot.app.clear_notifications()  # toasts expire on a timer: not part of a deterministic picture
    await pilot.pause(0.2)  # let the follow-to-end scroll (after the last layout) land
    await pilot.wait_for_scheduled_animations()


async def _settled_relaunch(pilot) -> None:
    await _settled(pilot)
    await pilot.press("r")
    await pilot.pause()
    for widget in pilot.app.screen.query("Input"):
        widget.cursor_blink = False  # a blinking cursor makes two identical screens differ
    await pilot.pause(0.2)


def test_dashboard_160x48(snap_compare) -> None:
    assert snap_compare(seed_app(), terminal_size=(160, 48), run_before=_settled)


def test_dashboard_100x30(snap_compare) -> None:
    assert snap_compare(seed_app(), terminal_size=(100, 30), run_before=_settled)


def test_relaunch_screen_100x30(snap_compare) -> None:
    assert snap_compare(seed_app(), terminal_size=(100, 30), run_before=_settled_relaunch)
