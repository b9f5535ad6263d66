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

from test_snapshots import seed_app  # noqa: E402
from ui_kit import settle  # noqa: E402

OUT = ROOT / "screenshots"
DATA = ROOT / "tests" / "ui" / "data"
SHOTS = (  # name, size, keys pressed after the log is loaded, which app
    ("dashboard-160x48", (160, 48), (), "seed"),
    ("dashboard-100x30", (100, 30), (), "seed"),
    ("relaunch-100x30", (100, 30), ("r",), "seed"),
    ("explain-160x48", (160, 48), ("d", "enter"), "seed"),
    ("tabs-160x48", (160, 48), ("2",), "tabs"),  # the two-node group tab, with the strip across tabs
    ("group-relaunch-160x48", (160, 48), ("2", "r"), "tabs"),
    ("fleet-160x48", (160, 48), ("0",), "tabs"),  # the fleet screen over the tabs (fixed Prometheus answers)
    ("fleet-100x30", (100, 30), ("0", "down"), "tabs"),
)


def _recorded(name: str, label: str, pid: int):  # noqa: ANN202 - a ui.session.Session
    from spectui.core.launch import parse_command
    from spectui.ui.session import Session, read_recorded_log, replay_lines

    path = DATA / name
    header = path.read_text().splitlines()[:3]
    launch = parse_command(next(h for h in header if h.startswith("# launch: "))[len("# launch: "):])
    return Session(label=label, log_path=name, tail_factory=replay_lines(read_recorded_log(str(path))), replay=True,
                   probe_gpus=False, launch=launch, sglang_version="0.5.23", current_pid=pid)


def fleet_source():  # noqa: ANN201 - a ui.screens.fleet.FleetSource answering one fixed snapshot
    """What Prometheus would say of five servers, as fixed metric values (the diagnoses are spectui's own):
    the seed incident (steps 1: ceiling 2, 56.8 tok/s against 90 without speculation), a draft that is
    rejected almost always, a server down, a healthy EAGLE-3 at steps 3, and one without speculation."""
    from spectui.fleet import FleetEntry, FleetSnapshot, InstanceMetrics, diagnose
    from spectui.ui.screens.fleet import FleetSource

    names = frozenset({"sglang:num_running_reqs", "sglang:spec_accept_length", "sglang:gen_throughput"})
    rows = [
        dict(instance="gpu1:30000", up=True, accept_len=1.6, accept_rate=0.6, gen_tokens_per_s=56.8, running=1,
             queued=0, steps=1, draft_tokens=2, baseline_tps=90.0, metric_names=names),
        dict(instance="gpu6:30000", up=True, accept_len=1.08, accept_rate=0.03, gen_tokens_per_s=61.0, running=4,
             queued=0, steps=3, draft_tokens=4, metric_names=names),
        dict(instance="gpu9:30000", up=False, scrape_error="Get \"http://gpu9:30000/metrics\": connection refused"),
        dict(instance="gpu4:30000", up=True, accept_len=3.05, accept_rate=0.68, gen_tokens_per_s=161.7, running=8,
             queued=0, steps=3, draft_tokens=4, baseline_tps=90.0, metric_names=names),
        dict(instance="gpu5:30000", up=True, gen_tokens_per_s=89.6, running=8, queued=2, metric_names=names),
    ]
    entries = []
    for row in rows:
        m = InstanceMetrics(job="sglang", **row)
        entries.append(FleetEntry(m, diagnose(m)))
    snap = FleetSnapshot("http://prometheus:9090", 'job="sglang"', entries, taken_at=1000.0)
    return FleetSource(lambda: snap, interval=3600.0, url="http://prometheus:9090")


def tabs_app():  # noqa: ANN201 - a TabbedApp: the seed on gpu1, a two-node server on gpu2 + gpu3 (recorded)
    from spectui.ui.multi.app import TabbedApp
    from spectui.ui.multi.assemble import tab_specs

    sessions = [_recorded("silent-override-sim.log", "gpu1", 4242), _recorded("two-node-rank0-sim.log", "gpu2", 5150),
                _recorded("two-node-rank1-sim.log", "gpu3", 5151)]
    return TabbedApp(tab_specs(sessions), fleet=fleet_source(), clock=lambda: 1000.0)


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
