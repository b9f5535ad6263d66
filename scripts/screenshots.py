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
SHOTS = (  # name, size, keys pressed after the log is loaded
    ("dashboard-160x48", (160, 48), ()),
    ("dashboard-100x30", (100, 30), ()),
    ("relaunch-100x30", (100, 30), ("r",)),
    ("explain-160x48", (160, 48), ("d", "enter")),
)


async def shoot(name: str, size: tuple[int, int], keys: tuple[str, ...]) -> Path:
    app = seed_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        app.clear_notifications()
        for key in keys:
            await pilot.press(key)
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
    for name, size, keys in SHOTS:
        svg = asyncio.run(shoot(name, size, keys))
        png = to_png(svg)
        print(f"{svg.relative_to(ROOT)}" + (f"  {png.relative_to(ROOT)}" if png else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
