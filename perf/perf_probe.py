"""What the cockpit costs the server: requests a second an attached cockpit sends it, counted at the server.

    python3 perf/perf_probe.py [--seconds S] [--tabs N] [--traffic RPS]

A real simulator (`python -m spectui.sim`, its stdout and stderr in one log as an operator starts it) is
attached the way `spectui connect local --pid PID` attaches it (build_session: discovery, /server_info
once, then the dashboard's liveness, idle /metrics and GPU workers), headless (Textual's run_test), once
with one tab and once with N tabs on the same server. After `--settle` seconds (start-up: the first
reads, discovery, /server_info, the first probe round) the server's access log (uvicorn's lines, as
SGLang writes them) is counted over `--seconds`: requests a second by path. Also counted: commands run on
the host (`host.run`: over SSH, each is an exec on the server's machine) and process-state reads (on a
remote host each is a `cat /proc/PID/stat` there). Two server states: idle (no traffic: the log is
silent) and busy (`--traffic` requests/s: decode lines prove it alive). With `--ssh` the tabs attach over
a real sshd on 127.0.0.1 (tests/sshd_harness.py) as `connect user@127.0.0.1:PORT --pid PID` does, and the
host commands counted are SSH execs on the server's machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ACCESS = re.compile(r'"(GET|POST) (/[^ ?"]*)[^"]* HTTP/1\.1" (\d+)')
# what a cockpit asks (the busy server's own built-in client posts /v1/chat/completions: not counted)
PROBES = ("/health", "/health_generate", "/server_info", "/get_server_info", "/metrics", "/model_info",
          "/get_model_info")


def start_sim(root: Path, port: int, traffic: float) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}
    env.update({"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_TRAFFIC": str(traffic)})
    argv = [sys.executable, "-m", "spectui.sim", "--model-path", "/models/llama", "--port", str(port)]
    out = subprocess.run(["sh", "-c", 'cd "$1" && shift && setsid nohup "$@" > server.log 2>&1 < /dev/null & echo $!',
                          "sh", str(root), *argv], capture_output=True, text=True, check=True, env=env)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(Exception), urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            if r.status == 200:
                return pid
        if time.monotonic() > deadline:
            raise SystemExit("the simulator did not become healthy within 60 s")
        time.sleep(0.2)


def access_counts(log: Path, start: int) -> tuple[Counter[str], int]:
    """Requests by path in the log from byte `start` on, and the end offset."""
    data = log.read_bytes()
    counts: Counter[str] = Counter()
    for line in data[start:].decode(errors="replace").splitlines():
        m = ACCESS.search(line)
        if m and m.group(2) in PROBES:
            counts[m.group(2)] += 1
    return counts, len(data)


class Calls:
    """Counts host.run (commands) and process-state reads made by the cockpit, process-wide."""

    def __init__(self) -> None:
        self.runs = 0
        self.states = 0

    def install(self) -> None:
        from spectui.sources import probeshare as liveness  # process_state(s) live there
        from spectui.sources.local import LocalHost
        from spectui.sources.ssh import SSHHost

        calls = self
        for cls in (LocalHost, SSHHost):
            def wrap_run(orig_run):  # type: ignore[no-untyped-def]
                async def run(self, argv, **kw):  # type: ignore[no-untyped-def]
                    calls.runs += 1
                    return await orig_run(self, argv, **kw)
                return run

            cls.run = wrap_run(cls.run)  # type: ignore[method-assign]
        for name in ("process_state", "process_states"):
            orig = getattr(liveness, name, None)
            if orig is None:
                continue

            def wrap(orig):  # type: ignore[no-untyped-def]
                async def counted(host, pids, *a, **kw):  # type: ignore[no-untyped-def]
                    calls.states += 1
                    return await orig(host, pids, *a, **kw)
                return counted

            setattr(liveness, name, wrap(orig))


async def measure(port: int, pid: int, log: Path, tabs: int, settle: float, seconds: float,
                  calls: Calls, sshd: object = None) -> dict[str, float]:
    from spectui.commands.connect import build_session
    from spectui.ui.multi.app import TabbedApp, TabSpec

    args = argparse.Namespace(target="local", log=None, pid=pid, server_port=None, read_only=True, ssh_config=None,
                              identity=None, known_hosts=None, accept_new_host_key=False)
    if sshd is not None:
        args.target, args.ssh_config = sshd.target, "/dev/null"  # type: ignore[attr-defined]
        args.identity, args.known_hosts = [str(sshd.client_key)], str(sshd.known_hosts)  # type: ignore[attr-defined]
    sessions = [await build_session(args) for _ in range(tabs)]
    app = TabbedApp([TabSpec(f"tab{i}", s) for i, s in enumerate(sessions)])
    try:
        async with app.run_test(size=(160, 48)):
            await asyncio.sleep(settle)

            def parsed() -> int:  # lines through the pipeline, every tab (a hidden one's held lines count)
                return sum(t.dashboard.query_one("LogView").last_line_no for t in app.tabs)

            l0 = parsed()
            _, start = access_counts(log, 0)
            r0, s0, t0, c0 = calls.runs, calls.states, time.monotonic(), cpu_seconds()
            await asyncio.sleep(seconds)
            counts, _ = access_counts(log, start)
            took = time.monotonic() - t0
            runs, states, cpu = calls.runs - r0, calls.states - s0, cpu_seconds() - c0
            lines = parsed() - l0
    finally:
        for s in sessions:
            with contextlib.suppress(Exception):
                await s.host.close()
    out = {f"req:{path}": n / took for path, n in counts.items()}
    out.update(total=sum(counts.values()) / took, runs=runs / took, states=states / took, cpu=cpu / took,
               lines=lines / took)
    return out


def cpu_seconds() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def show(label: str, r: dict[str, float]) -> None:
    paths = ", ".join(f"{k[4:]} {v:.2f}" for k, v in sorted(r.items()) if k.startswith("req:")) or "none"
    print(f"  {label}: {r['total']:.2f} requests/s to the server ({paths}); host commands {r['runs']:.2f}/s, "
          f"process-state reads {r['states']:.2f}/s; cockpit CPU {r['cpu'] * 100:.2f}% of a core"
          f" ({r['lines']:.0f} log lines/s read)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0, help="counting window per measurement")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--traffic", type=float, default=0.5, help="the busy server's built-in client, requests/s (simulated time, x40)")
    parser.add_argument("--states", default="idle,busy")
    parser.add_argument("--ssh", action="store_true", help="attach over a real sshd on 127.0.0.1")
    args = parser.parse_args()
    from spectui.commands.demo.simrun import free_port

    calls = Calls()
    calls.install()
    sshd = None
    if args.ssh:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from sshd_harness import start_sshd

        sshd = start_sshd(Path(tempfile.mkdtemp(prefix="perf-probe-sshd-")))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (2 cores shared)")
    results: dict[tuple[str, int], dict[str, float]] = {}
    for state in args.states.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            root, port = Path(tmp), free_port()
            pid = start_sim(root, port, 0.0 if state == "idle" else args.traffic)
            try:
                print(f"server {state} (sim pid {pid}, {args.seconds:.0f} s windows after {args.settle:.0f} s):")
                for n in (1, args.tabs):
                    r = asyncio.run(measure(port, pid, root / "server.log", n, args.settle, args.seconds, calls,
                                            sshd))
                    results[(state, n)] = r
                    show(f"{n:2d} tab{'s' if n > 1 else ' '}", r)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
    if sshd is not None:
        import shutil

        sshd.stop()
        shutil.rmtree(sshd.root, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
