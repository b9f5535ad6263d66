"""Regenerate screenshots/*.svg and *.png for the README from a recorded simulator run (deterministic).

    python3 scripts/screenshots.py

SVGs come from Textual's save_screenshot (fixed clock, fixed data); PNGs from rsvg-convert, after
pointing the SVG at a locally installed monospace font (the SVG names Fira Code, fetched by browsers).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from conftest import settle  # noqa: E402
from test_snapshots import seed_app  # noqa: E402

OUT = ROOT / "screenshots"
DATA = ROOT / "tests" / "ui" / "data"
SHOTS = (  # name, size, keys pressed after the log is loaded, which app
    ("dashboard-160x48", (160, 48), (), "seed"),
    ("dashboard-100x30", (100, 30), (), "seed"),
    ("relaunch-100x30", (100, 30), ("r",), "seed"),
    ("explain-160x48", (160, 48), ("d", "enter"), "seed"),
    ("tabs-160x48", (160, 48), ("2",), "tabs"),  # the two-node group tab, with the strip across tabs
    ("group-relaunch-160x48", (160, 48), ("2", "r"), "tabs"),
)


def _recorded(name: str, label: str, pid: int):  # noqa: ANN202 - a ui.session.Session
    from spectui.core.launch import parse_command
    from spectui.ui.session import Session, read_recorded_log, replay_lines

    path = DATA / name
    header = path.read_text().splitlines()[:3]
    launch = parse_command(next(h for h in header if h.startswith("# launch: "))[len("# launch: "):])
    return Session(label=label, log_path=name, tail_factory=replay_lines(read_recorded_log(str(path))), replay=True,
                   probe_gpus=False, launch=launch, sglang_version="0.5.23", current_pid=pid)


def tabs_app():  # noqa: ANN201 - a TabbedApp: the seed on gpu1, a two-node server on gpu2 + gpu3 (recorded)
    from spectui.ui.multi.app import TabbedApp
    from spectui.ui.multi.assemble import tab_specs

    sessions = [_recorded("silent-override-sim.log", "gpu1", 4242), _recorded("two-node-rank0-sim.log", "gpu2", 5150),
                _recorded("two-node-rank1-sim.log", "gpu3", 5151)]
    return TabbedApp(tab_specs(sessions), clock=lambda: 1000.0)


async def shoot(name: str, size: tuple[int, int], keys: tuple[str, ...], which: str) -> Path:
    app = seed_app() if which == "seed" else tabs_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        if which == "tabs":
            for tab in app.tabs:  # every tab's replay read, then one summary-strip refresh
                for _ in range(300):
                    if tab.dashboard.tail_done and tab.dashboard.finished:
                        break
                    await pilot.pause(0.02)
            await pilot.pause(1.3)
        app.clear_notifications()
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.2)
        if which == "tabs":
            await settle(pilot, app)
        for widget in app.screen.query("Input"):
            widget.cursor_blink = False
        await pilot.pause(0.3)
        path = OUT / f"{name}.svg"
        app.save_screenshot(filename=path.name, path=str(OUT))
    return path


def to_png(svg: Path) -> Path | None:
    exe = shutil.which("rsvg-convert")
    if exe is None:
        print("rsvg-convert not found: PNGs not regenerated (apt-get install librsvg2-bin)", file=sys.stderr)
        return None
    text = svg.read_text()
    text = text.replace("<svg ", '<svg xml:space="preserve" ', 1).replace("&#160;", " ")
    text = text.replace("font-family: Fira Code, monospace", "font-family: DejaVu Sans Mono, monospace")
    tmp = svg.with_suffix(".png.svg")
    tmp.write_text(text)
    png = svg.with_suffix(".png")
    try:
        subprocess.run([exe, str(tmp), "-o", str(png)], check=True)
    finally:
        tmp.unlink()
    return png


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name, size, keys, which in SHOTS:
        svg = asyncio.run(shoot(name, size, keys, which))
        png = to_png(svg)
        print(f"{svg.relative_to(ROOT)}" + (f"  {png.relative_to(ROOT)}" if png else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
