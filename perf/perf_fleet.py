"""`spectui fleet` at scale: a real Prometheus scraping 1,000 and 10,000 synthetic SGLang servers.

    python3 perf/perf_fleet.py [--sizes 1000,10000] [--runs 3] [--interval 5] [--refreshes 4]
                               [--scrape-interval 15] [--skip-screen] [--skip-watch]
    python3 perf/perf_fleet.py --bed-only 10000        # start the bed, print its URL, wait for ctrl-c

The bed (perf/fleetbed): exporter.py serves SGLang's families for N instances, each its own scrape target
(relabelled `/metrics?target=ADDR`, realistic labels: instance, DP rank, model, both metric spellings),
plus the exporter's own target in the same job; Prometheus scrapes them every --scrape-interval seconds.
Per size, in the same run against the same Prometheus:
  baseline    `curl --compressed` of exactly the queries `fleet` sends (recorded from collect()), one curl
              process, all of them in sequence: best of --runs; its peak RSS
  fleet       `python -m spectui.cli fleet --json`: best of --runs, the child's peak RSS (wait4), the rows it
              lists (must be N: the exporter's own target is no instance)
  watch       `fleet --watch --json --interval I`: the time between successive outputs over --refreshes
              refreshes, against I
  screen      the cockpit's fleet screen (headless run_test, 160x48, in a fresh interpreter) fed by the real
              collect(): time until the N rows are shown; then key latency (key in -> repainted after the
              cursor moved) for down / pagedown / ctrl+end / ctrl+home, the sort key `o` (order by another
              column, re-ordering N rows), and the time a refresh holds the event loop when it applies a
              snapshot
Figures print as ratios to the curl baseline (and the watch period to its interval), with `uptime`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "perf" / "fleetbed"))

from bed import start_bed  # noqa: E402


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def recorded_queries(url: str) -> tuple[list[str], int]:
    """The instant queries one collect() sends (and the rows it lists), by asking the real Prometheus once."""
    from spectui.fleet import PrometheusClient, collect

    class Recording(PrometheusClient):
        exprs: list[str] = []

        def query(self, expr: str):  # type: ignore[no-untyped-def]
            self.exprs.append(expr)
            return super().query(expr)

    with Recording(url, timeout=120) as client:
        snap = collect(client)
    return list(Recording.exprs), len(snap.entries)


def timed_child(argv: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, float, bytes]:
    """Wall seconds, peak RSS (MB) of the child, its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE)
    out = b""
    if stdout is None:
        assert proc.stdout is not None
        out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.returncode not in (0, 1) or (stdout is None and not out.strip()):
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    return wall, usage.ru_maxrss / 1024, out


def curl_argv(url: str, exprs: list[str]) -> list[str]:
    argv = ["curl", "-sS", "--compressed", "-H", "Accept: application/json"]
    for expr in exprs:
        argv += ["-o", "/dev/null", f"{url}/api/v1/query?query={quote(expr, safe='')}"]
    return argv


def measure_cli(url: str, n: int, exprs: list[str], runs: int) -> dict[str, float]:
    fleet = [sys.executable, "-m", "spectui.cli", "fleet", "--prometheus", url, "--json", "--timeout", "120"]
    curls, fleets, rows = [], [], -1
    for _ in range(runs):  # alternated: both see the same machine
        curls.append(timed_child(curl_argv(url, exprs)))
        wall, rss, out = timed_child(fleet, stdout=None)
        fleets.append((wall, rss))
        rows = len(json.loads(out)["instances"])
    c = min(curls)
    f = min(fleets)
    return {"curl_s": c[0], "curl_mb": c[1], "fleet_s": f[0], "fleet_mb": max(x[1] for x in fleets), "rows": rows,
            "expected_rows": n}


def measure_watch(url: str, interval: float, refreshes: int) -> dict[str, float]:
    argv = [sys.executable, "-m", "spectui.cli", "fleet", "--prometheus", url, "--json", "--watch",
            "--interval", f"{interval:g}", "--timeout", "120"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    arrivals: list[float] = []
    assert proc.stdout is not None
    buf = b""
    try:
        while len(arrivals) < refreshes + 1:
            chunk = proc.stdout.read(1 << 20)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                _line, buf = buf.split(b"\n", 1)
                arrivals.append(time.perf_counter())
    finally:
        proc.terminate()
        proc.wait(10)
    periods = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
    if not periods:
        return {"period_mean": float("nan"), "period_max": float("nan"), "interval": interval, "n": 0}
    return {"period_mean": statistics.mean(periods), "period_max": max(periods), "interval": interval,
            "n": len(periods)}


def measure_screen(url: str, n: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--screen-worker", url, "--instances",
                          str(n)], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"screen worker failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------- screen worker


async def screen_worker(url: str, n: int) -> dict[str, float]:
    from textual import events
    from textual.app import App

    from spectui.fleet import PrometheusClient, collect
    from spectui.ui.screens.fleet import FleetScreen, FleetSource
    from spectui.ui.widgets.fleet_table import FleetTable

    client = PrometheusClient(url, timeout=120)
    collect_times: list[float] = []
    apply_times: list[float] = []

    def do_collect():  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        snap = collect(client)
        collect_times.append(time.perf_counter() - t0)
        return snap

    async def no_open(_target: str, _instance: str) -> None:
        return None

    source = FleetSource(do_collect, interval=5.0, url=url)
    screen = FleetScreen(source, no_open, closable=False)
    original_show = screen.show

    def timed_show(snap):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        original_show(snap)
        apply_times.append(time.perf_counter() - t0)

    screen.show = timed_show  # type: ignore[method-assign]

    class Bench(App[None]):
        def on_mount(self) -> None:
            self.push_screen(screen)

    app = Bench()
    result: dict[str, float] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.perf_counter()
        table = screen.query_one(FleetTable)
        while table.row_count < n:
            await pilot.pause(0.05)
            if time.perf_counter() - t0 > 600:
                raise TimeoutError(f"{table.row_count} rows after 600 s")
        painted = asyncio.Event()
        screen.call_after_refresh(painted.set)
        await painted.wait()
        result["first_rows_s"] = time.perf_counter() - t0
        result["rows"] = table.row_count
        await pilot.pause(0.3)

        async def press(key: str, done) -> float:  # type: ignore[no-untyped-def]
            answered = asyncio.Event()
            before = done()
            ev = events.Key(key, None)
            ev.set_sender(app)
            k0 = time.perf_counter()
            app._driver.send_message(ev)
            while done() == before:
                await asyncio.sleep(0.001)
            app.call_after_refresh(answered.set)
            await answered.wait()
            return (time.perf_counter() - k0) * 1000

        def cursor() -> int:
            return table.cursor_row

        for key, count in (("down", 20), ("pagedown", 10), ("ctrl+end", 1), ("ctrl+home", 1), ("up", 5),
                           ("ctrl+end", 1), ("ctrl+home", 1)):
            samples = result.setdefault(f"key_{key}", [])  # type: ignore[assignment]
            for _ in range(count):
                if key == "up" and table.cursor_row == 0:
                    await press("down", cursor)
                samples.append(await press(key, cursor))  # type: ignore[attr-defined]
                await asyncio.sleep(0.03)
        if hasattr(screen, "action_cycle_order"):
            for _ in range(4):
                result.setdefault("key_o", []).append(await press("o", lambda: screen.order))  # type: ignore[attr-defined]
                await asyncio.sleep(0.05)
        # two more refreshes: how long one holds the event loop when it applies a snapshot
        want = screen.refreshes + 2
        while screen.refreshes < want:
            await pilot.pause(0.1)
    await asyncio.to_thread(client.close)  # its own loop: not from inside this one
    for k, v in list(result.items()):
        if isinstance(v, list):
            result[k] = {"p50": statistics.median(v), "p95": sorted(v)[max(0, math.ceil(len(v) * 0.95) - 1)],
                         "max": max(v), "n": len(v)}  # type: ignore[assignment]
    result["collect_s"] = statistics.median(collect_times)
    result["apply_first_s"] = apply_times[0]
    result["apply_later_s"] = max(apply_times[1:]) if len(apply_times) > 1 else float("nan")
    return result


# ------------------------------------------------------------------------------------------------- main


def run_size(n: int, args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix=f"fleetbed-{n}-") as tmp, \
            start_bed(n, Path(tmp), scrape_interval=args.scrape_interval) as bed:
        t0 = time.perf_counter()
        bed.wait_scraped(timeout=max(180, 4 * args.scrape_interval), scrapes=2)
        print(f"[{n}] bed up and scraped in {time.perf_counter() - t0:.0f}s ({bed.url}); {uptime()}", flush=True)
        return measure_all(bed.url, n, args)


def measure_all(url: str, n: int, args: argparse.Namespace) -> dict[str, object]:
    exprs, rows = recorded_queries(url)
    out: dict[str, object] = {"n": n, "queries": exprs, "load_before": uptime()}
    out["cli"] = cli = measure_cli(url, n, exprs, args.runs)
    print(f"[{n}] curl {cli['curl_s']:.2f}s  fleet --json {cli['fleet_s']:.2f}s ({cli['fleet_s'] / cli['curl_s']:.1f}x)"
          f"  peak {cli['fleet_mb']:.0f} MB  rows {cli['rows']}/{n}", flush=True)
    if not args.skip_watch:
        out["watch"] = w = measure_watch(url, args.interval, args.refreshes)
        print(f"[{n}] watch period {w['period_mean']:.2f}s mean, {w['period_max']:.2f}s max for --interval "
              f"{w['interval']:g}", flush=True)
    if not args.skip_screen:
        out["screen"] = measure_screen(url, n)
        print(f"[{n}] screen {json.dumps(out['screen'])}", flush=True)
    out["load_after"] = uptime()
    return out


def report(results: list[dict]) -> None:
    print("\n| N | curl (same queries) | fleet --json | × curl | peak RSS | rows | watch period (interval) "
          "| screen: rows shown | key p95 down / pgdn / end / sort | refresh holds loop | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        c = r["cli"]
        w = r.get("watch") or {}
        s = r.get("screen") or {}

        def p95(key: str, s: dict = s) -> str:
            return f"{s[key]['p95']:.0f}" if key in s else "-"

        watch = f"{w['period_mean']:.2f}s max {w['period_max']:.2f} ({w['interval']:g}s)" if w else "-"
        shown = f"{s['first_rows_s']:.1f}s ({s['first_rows_s'] / c['curl_s']:.1f}× curl)" if s else "-"
        keys = f"{p95('key_down')} / {p95('key_pagedown')} / {p95('key_ctrl+end')} / {p95('key_o')} ms" if s else "-"
        hold = f"{s['apply_first_s'] * 1000:.0f} ms first, {s['apply_later_s'] * 1000:.0f} ms later" if s else "-"
        load = r["load_after"].split("load average:")[-1].strip()
        print(f"| {r['n']:,} | {c['curl_s']:.2f}s | {c['fleet_s']:.2f}s | {c['fleet_s'] / c['curl_s']:.1f}× "
              f"| {c['fleet_mb']:.0f} MB | {c['rows']} | {watch} | {shown} | {keys} | {hold} | {load} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--interval", type=float, default=5.0, help="fleet --watch --interval")
    ap.add_argument("--refreshes", type=int, default=4)
    ap.add_argument("--scrape-interval", type=float, default=15.0)
    ap.add_argument("--skip-screen", action="store_true")
    ap.add_argument("--skip-watch", action="store_true")
    ap.add_argument("--bed-only", type=int, metavar="N")
    ap.add_argument("--prometheus", metavar="URL", help="measure an already running bed (with --instances)")
    ap.add_argument("--instances", type=int)
    ap.add_argument("--screen-worker", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", metavar="FILE")
    args = ap.parse_args()
    if args.screen_worker:
        print(json.dumps(asyncio.run(screen_worker(args.screen_worker, args.instances))))
        return 0
    if args.bed_only:
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill PID stops the bed too
        tmp = Path(tempfile.mkdtemp(prefix="fleetbed-"))
        with start_bed(args.bed_only, tmp, scrape_interval=args.scrape_interval) as bed:
            bed.wait_scraped(timeout=300, scrapes=2)
            print(bed.url, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
    print(f"machine: {os.cpu_count()} cores; {uptime()}", flush=True)
    if args.prometheus:
        results = [measure_all(args.prometheus, args.instances, args)]
    else:
        results = [run_size(int(x), args) for x in args.sizes.split(",")]
    report(results)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
