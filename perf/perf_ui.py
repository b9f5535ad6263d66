"""Cockpit responsiveness: key latency while a 5k lines/s log streams in, and idle CPU on a quiet log.

    python3 perf/perf_ui.py [--seconds S] [--rate N] [--runs N] [--against REV] [--mix serving|cycled]

Prints figures and ratios against baselines measured in the same run (no traffic; `tail -F` on the same
quiet file). The app runs headless (Textual's run_test), with the real pipeline, rules and LogTail.
Each measurement runs in a fresh interpreter; with `--against REV` the same measurements also run on
REV's tree (`git archive`, in a temp dir; or REV is a directory holding a spectui tree), alternating
with the working tree run after run, and the medians of both are printed side by side.

The stream (`--mix serving`, the default): a recorded simulator run's start-up once (one launch), then
its serving lines (Prefill / Decode / HTTP) cycled, as a busy server writes them. `--mix cycled` replays
the whole recording in a loop, start-up included: a new launch every 287 lines (~17 a second at 5k
lines/s), which no server does; it was the default before (kept to compare with older figures).
Idle CPU counts the cockpit's own CPU and that of the commands it runs (RUSAGE_CHILDREN), once it has
settled (2.5 s after start: the first read, the idle flush and discovery are not idle work).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The line mix a busy server writes: a recorded simulator run (Prefill/Decode/HTTP lines in SGLang's
# formats). tests/ui/data/silent-override-sim.log, header lines skipped.
LINES = tuple(
    ln for ln in (ROOT / "tests/ui/data/silent-override-sim.log").read_text().splitlines() if not ln.startswith("# ")
)
SERVING_AT = next(i for i, line in enumerate(LINES) if "ready to roll" in line) + 1  # first line after start-up
IDLE_SETTLE = 2.5  # seconds before an idle window opens
# A stand-in server for the probe's idle cost: answers /health 200 with keep-alive; its pid is the one probed.
FAKE_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


def line_at(i: int, mix: str = "cycled") -> str:
    """The i-th line of the stream (0-based)."""
    if mix == "cycled" or i < SERVING_AT:
        return LINES[i % len(LINES)]
    return LINES[SERVING_AT + (i - SERVING_AT) % (len(LINES) - SERVING_AT)]


def stream(rate: int, mix: str = "cycled"):  # type: ignore[no-untyped-def]
    """A tail factory yielding `rate` lines/s in batches about 50 times a second (paced by the clock)."""
    from spectui.sources.base import ConnState, TailLines, TailState

    async def events(_path: str):  # type: ignore[no-untyped-def]
        yield TailState(ConnState.CONNECTED, "bench")
        n, start = 1, time.perf_counter()
        while True:
            await asyncio.sleep(0.02)  # a tail reads about 50 times a second
            due = int((time.perf_counter() - start) * rate) + 1 - n  # paced by the clock, not by sleeps
            if due > 0:
                yield TailLines(tuple(line_at(n + i, mix) for i in range(due)), n, 0)
                n += due

    return events


async def measure_keys(app, seconds: float, settle: float = 0.5,  # type: ignore[no-untyped-def]
                       inside=None) -> tuple[list[float], int, object]:
    """Press space (pause/resume) every 50 ms for `seconds`: ms from the key entering the app to the screen
    having been refreshed after its action ran. Returns (samples, lines the log view holds, the dashboard);
    with `inside`, its result on the app (still running) instead of the line count."""
    from textual import events

    samples: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        dash = app.dashboard
        original = dash.action_toggle_follow
        answered = asyncio.Event()

        def toggled() -> None:
            original()
            dash.call_after_refresh(answered.set)  # answered = handled and repainted

        dash.action_toggle_follow = toggled  # type: ignore[method-assign]
        await pilot.pause(settle)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            answered.clear()
            key = events.Key("space", " ")
            key.set_sender(app)
            t0 = time.perf_counter()
            app._driver.send_message(key)
            await answered.wait()
            samples.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.05)
        lines = inside(app) if inside is not None else dash.query_one("LogView").last_line_no
    return samples, lines, dash


async def key_latency(rate: int, seconds: float, mix: str = "cycled") -> list[float]:
    """ms from a key event entering the app to the screen having been refreshed after its action ran."""
    samples, lines = await _key_latency(rate, seconds, mix)
    if rate:
        print(f"  lines received in {seconds:.0f}s: {lines:,} ({lines / seconds:,.0f}/s)")
    return samples


async def _key_latency(rate: int, seconds: float, mix: str) -> tuple[list[float], int]:
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    session = Session(label="bench", log_path="bench.log" if rate else None,
                      tail_factory=stream(rate, mix) if rate else None, probe_gpus=False)
    samples, lines, _dash = await measure_keys(SpectuiApp(session), seconds)
    return samples, int(lines)  # type: ignore[call-overload]


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


async def idle_cpu(path: str | None, seconds: float, *, server: tuple[int, int] | None = None) -> float:
    """CPU share of a core (this process and the commands it ran) of a cockpit following `path`, once settled;
    `server` = (pid, port): a live server it probes (liveness: /health, the process's state)."""
    from spectui.sources.local import LocalHost
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    session = Session(label="bench", log_path=path, host=LocalHost(), probe_gpus=False)
    if server is not None:
        session.current_pid, session.server_port = server
    app = SpectuiApp(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(IDLE_SETTLE)
        c0, t0 = cpu_seconds() + _children_cpu(), time.perf_counter()
        await asyncio.sleep(seconds)
        used = cpu_seconds() + _children_cpu() - c0
        if server is not None:
            health = app.dashboard.health
            print(f"  (probed server: {health.state if health else 'no verdict'})", file=sys.stderr)
        return used / (time.perf_counter() - t0)


def tail_cpu(path: str, seconds: float) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(["tail", "-F", path], stdout=subprocess.DEVNULL)
    time.sleep(seconds)
    proc.terminate()
    proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)) / seconds


def percentiles(ms: list[float]) -> tuple[float, float, float]:
    return statistics.median(ms), sorted(ms)[int(0.95 * (len(ms) - 1))], max(ms)


def summary(name: str, ms: list[float]) -> float:
    p50, p95, top = percentiles(ms)
    print(f"  {name}: {len(ms)} key presses, median {p50:.1f} ms, p95 {p95:.1f} ms, max {top:.1f} ms")
    return p50


def quiet_log() -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write("\n".join(LINES[:50]) + "\n")
        return fh.name


def worker(args: argparse.Namespace) -> dict[str, float]:
    """One tree's figures, in this (fresh) interpreter."""
    out: dict[str, float] = {"load": os.getloadavg()[0]}  # the machine's 1-minute load average when it began
    quiet = asyncio.run(key_latency(0, args.seconds))
    busy, lines = asyncio.run(_key_latency(args.rate, args.seconds, args.mix))
    for name, ms in (("quiet", quiet), ("busy", busy)):
        out[f"{name}_n"] = len(ms)
        out[f"{name}_p50"], out[f"{name}_p95"], out[f"{name}_max"] = percentiles(ms)
    out["busy_lines_per_s"] = lines / args.seconds
    path = quiet_log()
    fake = subprocess.Popen([sys.executable, "-c", FAKE_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(fake.stdout.readline())  # type: ignore[union-attr]
        out["idle_log"] = asyncio.run(idle_cpu(path, args.seconds))
        out["idle_probe"] = asyncio.run(idle_cpu(path, args.seconds, server=(fake.pid, port)))
        out["idle_empty"] = asyncio.run(idle_cpu(None, args.seconds))
    finally:
        fake.terminate()
        fake.wait()
        os.unlink(path)
    return out


def use_tree(tree: Path) -> None:
    """Import spectui (and its rule library, spectui.builtin_rules = rules/) from `tree`."""
    import importlib.util

    sys.path.insert(0, str(tree))
    spec = importlib.util.spec_from_file_location("spectui.builtin_rules", tree / "rules" / "__init__.py",
                                                  submodule_search_locations=[str(tree / "rules")])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["spectui.builtin_rules"] = module
    spec.loader.exec_module(module)


def run_tree(tree: Path, args: argparse.Namespace) -> dict[str, float]:
    argv = [sys.executable, __file__, "--worker", "--tree", str(tree), "--seconds", str(args.seconds),
            "--rate", str(args.rate), "--mix", args.mix]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


FIGURES = (("quiet key p50 ms", "quiet_p50", 1), ("quiet key p95 ms", "quiet_p95", 1),
           ("busy key p50 ms", "busy_p50", 1), ("busy key p95 ms", "busy_p95", 1),
           ("busy key max ms", "busy_max", 1), ("busy lines/s", "busy_lines_per_s", 1),
           ("idle CPU, quiet log %", "idle_log", 100), ("idle CPU, + live server %", "idle_probe", 100),
           ("idle CPU, no log %", "idle_empty", 100))


def show_run(label: str, r: dict[str, float]) -> None:
    print(f"  {label}: keys quiet {r['quiet_p50']:.1f}/{r['quiet_p95']:.1f} ms, busy {r['busy_p50']:.1f}/"
          f"{r['busy_p95']:.1f} ms (p50/p95; max {r['busy_max']:.0f}, {r['busy_n']:.0f} presses, "
          f"{r['busy_lines_per_s']:,.0f} lines/s) · idle CPU {r['idle_log'] * 100:.2f}% quiet log, "
          f"{r['idle_probe'] * 100:.2f}% + live server, {r['idle_empty'] * 100:.2f}% no log · load {r['load']:.1f}",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="each measurement's window (default 8)")
    parser.add_argument("--rate", type=int, default=5000, help="lines per second of the busy stream")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything N times; medians printed")
    parser.add_argument("--against", metavar="REV", help="also measure git revision REV (or the spectui tree in "
                        "directory REV), alternating runs")
    parser.add_argument("--mix", choices=("serving", "cycled"), default="serving",
                        help="serving: start-up once, serving lines cycled (default); cycled: the whole recording")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        use_tree(args.tree)
        print(json.dumps(worker(args)))
        return 0
    trees = {"working tree": ROOT}
    tmp = tempfile.TemporaryDirectory(prefix="perf_ui-")
    if args.against and Path(args.against).is_dir():
        trees[Path(args.against).name] = Path(args.against)  # a tree as it is (e.g. the working tree, some files reverted)
    elif args.against:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.against], capture_output=True,
                             text=True, check=True).stdout.strip()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
        trees[rev] = Path(tmp.name)
    print(f"headless 160x48, {args.seconds:g}s windows, busy = {args.rate} lines/s ({args.mix} mix); "
          f"key = space (pause/resume), answered once repainted")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tmp:
        for run in range(args.runs):
            order = list(trees.items()) if run % 2 == 0 else list(reversed(trees.items()))
            for name, tree in order:
                results[name].append(run_tree(tree, args))
                show_run(f"run {run + 1} {name}", results[name][-1])
    path = quiet_log()
    try:
        base = tail_cpu(path, args.seconds)
    finally:
        os.unlink(path)
    print(f"medians of {args.runs} run(s)" + (f"; tail -F on the quiet log: {base * 100:.2f}% of a core"))
    print(f"  {'':28}" + "".join(f"{name:>16}" for name in trees))
    for label, key, scale in FIGURES:
        print(f"  {label:28}" + "".join(f"{statistics.median(r[key] for r in results[n]) * scale:16.2f}"
                                        for n in trees))
    return 0


if __name__ == "__main__":
    sys.exit(main())
