"""Every read-side capability against one real SGLang (NGRAM, 4 draft tokens, --api-key), as a user runs it:
discovery of its process tree, `check` on its log, `watch --jsonl` through a SIGSTOP, the cockpit through
Textual's pilot, `bench`, `record`/`report` (no secret in any member), and at the end a SIGKILL seen as
`gone` and the dead server started again from what is known of it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest
from realkit import RealServer, alive, chat, get, group_members, start_real

from spectui.sources.discover import discover
from spectui.sources.local import LocalHost

KEY = "sk-real-0f3c9a77e1d24b5c"  # the server's --api-key: must never appear in what spectui writes
PROMPTS = ["hello world the quick brown fox", "the quick brown fox jumps over the lazy dog",
           "hello the world is quick", "brown fox and the dog say hello world"]


def spectui(*args: str, timeout: float = 180, check: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-m", "spectui.cli", *args], capture_output=True, text=True,
                         timeout=timeout, env=env)
    if check:
        assert out.returncode == 0, f"spectui {' '.join(args)} exited {out.returncode}:\n{out.stderr[-2000:]}"
    return out


def traffic(port: int, n: int = 4, max_tokens: int = 48) -> None:
    for i in range(n):
        chat(port, PROMPTS[i % len(PROMPTS)], max_tokens=max_tokens, key=KEY)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, real_state: Path):
    server = start_real(tmp_path_factory.mktemp("ngram") / "run dir", ["--api-key", KEY])
    try:
        server.wait_healthy()
        traffic(server.port)
        yield server
    finally:
        server.stop()


def main_pid(srv: RealServer) -> int:
    (pid,) = srv.main_pids()
    return pid


async def test_discovery_finds_the_launcher_not_its_children(srv: RealServer) -> None:
    pid = main_pid(srv)
    found = [s for s in await discover(LocalHost()) if s.pid == pid]
    assert len(found) == 1, "the real server was not discovered"
    s = found[0]
    assert s.program.endswith("-m sglang.launch_server") and s.port == srv.port
    assert s.log_path == str(srv.log) and s.cwd == str(srv.root)
    assert s.env.get("SGLANG_USE_CPU_ENGINE") == "1"  # the environment serve.sh exported, read from /proc
    # The group holds the scheduler and detokenizer children, and none of them is listed as a server.
    names = {Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0] for p in group_members(s.pgid) if p != pid}
    assert any(n.startswith(b"sglang::scheduler") for n in names), names
    assert any(n.startswith(b"sglang::detokenizer") for n in names), names
    listed = {x.pid for x in await discover(LocalHost())}
    assert not listed & (set(group_members(s.pgid)) - {pid})


def test_check_reads_the_real_log(srv: RealServer) -> None:
    out = spectui("check", str(srv.log), "--json")
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    assert report["records"]["decode"] >= 2 and report["launches"] == 1
    assert report["phase"] in ("ready", "serving")
    last = report["decode"]["accept_len"]["last"]
    assert last is not None and 1.0 <= last <= 4.0  # NGRAM with 4 draft tokens: the ceiling is 4
    rules = {d["rule"] for d in report["diagnoses"]}
    assert "SPEC027" not in rules  # `cpu graph: False` on a CPU server is no missing CUDA graph
    assert not [d for d in report["diagnoses"] if d["severity"] == "error"], report["diagnoses"]
    assert KEY not in out.stdout


def test_watch_jsonl_decode_events_and_a_sigstop(srv: RealServer) -> None:
    pid = main_pid(srv)
    env = {**os.environ, "SPECTUI_UNHEALTHY_AFTER": "3", "SPECTUI_HEALTH_INTERVAL": "0.5"}
    proc = subprocess.Popen([sys.executable, "-m", "spectui.cli", "watch", "local", "--pid", str(pid), "--jsonl",
                             "--duration", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    events: list[dict] = []
    stop = threading.Event()

    def load() -> None:  # requests until the decode lines are seen (the watch starts at the log's end)
        while not stop.is_set():
            with contextlib.suppress(Exception):
                traffic(srv.port, 1)

    loader = threading.Thread(target=load, daemon=True)
    phase = "decode"
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            ev = json.loads(line)
            events.append(ev)
            if not loader.is_alive() and phase == "decode" and ev["type"] in ("connection", "health"):
                loader.start()
            if phase == "decode" and ev["type"] == "decode" and any(
                    e["type"] == "health" and e["state"] == "healthy" for e in events):
                stop.set()
                loader.join(timeout=120)
                os.kill(pid, signal.SIGSTOP)  # the launcher stops answering /health
                phase = "stopped"
            elif phase == "stopped" and ev["type"] == "health" and ev["state"] == "unhealthy":
                os.kill(pid, signal.SIGCONT)
                phase = "resumed"
            elif phase == "resumed" and ev["type"] == "health" and ev["state"] == "healthy":
                break
    finally:
        stop.set()
        os.kill(pid, signal.SIGCONT)
        proc.kill()
        proc.wait()
    decodes = [e for e in events if e["type"] == "decode"]
    assert decodes and all(1.0 <= e["accept_len"] <= 4.0 for e in decodes if e["accept_len"] is not None)
    states = [e["state"] for e in events if e["type"] == "health"]
    assert states[:1] == ["healthy"] and "unhealthy" in states and states[-1] == "healthy", (states, phase)
    assert get(srv.port, "/health")[0] == 200


def test_bench_measures_the_real_server(srv: RealServer) -> None:
    out = spectui("bench", "local", "--pid", str(main_pid(srv)), "--requests", "6", "--concurrency", "2",
                  "--max-tokens", "32", "--json", timeout=300, check=True)
    res = json.loads(out.stdout)
    assert res["requests"]["ok"] == 6 and res["requests"]["failed"] == 0, res
    assert res["output_tokens_per_s"] > 0 and res["ttft_ms"]["p50"] > 0
    assert res["server"]["pid"] == main_pid(srv)
    assert res["server"]["speculative"]["speculative_algorithm"] == "NGRAM"
    # The real server's own counters: NGRAM with 4 draft tokens accepts between 1 and 4 a round.
    assert res["spec"] is not None and 1.0 <= res["spec"]["accept_len"] <= 4.0
    # One robust per-request speed: Σ decode tokens / Σ decode time, never a near-zero division.
    per = res["per_request_tokens_per_s"]
    if per.get("mean") is not None and per.get("p50") is not None:
        assert per["mean"] < 5 * per["p50"], per
    assert KEY not in out.stdout and KEY not in out.stderr


def test_record_and_report_hold_no_secret(srv: RealServer, tmp_path: Path) -> None:
    bundle = tmp_path / "incident.tar.gz"
    load = threading.Thread(target=traffic, args=(srv.port, 2), daemon=True)
    load.start()
    spectui("record", "local", "--pid", str(main_pid(srv)), "-o", str(bundle), "--duration", "4",
            timeout=240, check=True)
    load.join(timeout=120)
    with tarfile.open(bundle) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        assert members
        for m in members:
            data = tar.extractfile(m).read()  # type: ignore[union-attr]
            assert KEY.encode() not in data, f"the api key is in {m.name}"
    names = {Path(m.name).name for m in members}
    assert "log.txt" in names and "launch.json" in names, names
    for fmt in ("md", "json"):
        out = spectui("report", str(bundle), "--format", fmt, timeout=120, check=True)
        assert KEY not in out.stdout
        assert "accept" in out.stdout.lower()


async def test_cockpit_on_the_real_server(srv: RealServer) -> None:
    from spectui.commands.connect import build_session
    from spectui.ui.app import SpectuiApp
    from spectui.ui.widgets.spec_panel import SpecPanel

    args = argparse.Namespace(target="local", pid=main_pid(srv), log=None, server_port=None, read_only=True,
                              hosts=None, prometheus=None, baseline_tps=None, speed=1.0, ssh_config=None,
                              identity=[], known_hosts=None, accept_new_host_key=False)
    session = await build_session(args)
    assert session.sglang_version and session.sglang_version.startswith("0.5.16")  # /server_info with the key
    app = SpectuiApp(session)
    load = threading.Thread(target=traffic, args=(srv.port, 3), daemon=True)
    async with app.run_test(size=(160, 48)) as pilot:
        load.start()
        dash = app.dashboard
        end = time.monotonic() + 120
        while not (dash.last_update is not None and dash.last_update.snapshot.samples > 0):
            assert time.monotonic() < end, "no decode line reached the cockpit"
            await pilot.pause(0.2)
        await dash.wait_processed()  # the panels follow the batch at most 4 times a second: on screen now
        panel = str(dash.query_one(SpecPanel).render())
        assert "ceiling 4" in panel and "(draft tokens 4)" in panel and "α≈" in panel, panel
        assert "cpu graph off" in panel and "OFF" not in panel  # the CPU backend's norm, not an alarm
        svg = app.export_screenshot()
        if os.environ.get("SPECTUI_REAL_SCREENSHOT"):
            Path(os.environ["SPECTUI_REAL_SCREENSHOT"]).write_text(svg)
        text = svg.replace("&#160;", " ")
        assert "NGRAM" in text and str(main_pid(srv)) in text
        assert "Decode runs without CUDA graphs" not in text
        assert KEY not in text
        # The config panel: requested vs effective from the real server_args line (topk silently 10).
        config = dash.query_one("#config")
        assert str(config.border_title).startswith("config: requested vs effective")
        from rich.console import Console

        console = Console(width=160, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        console.print(config.render())
        shown = console.export_text()
        topk = next(line for line in shown.splitlines() if "topk" in line)
        assert "10" in topk, shown  # NGRAM runs with topk 10 whatever was asked
        await pilot.press("r")  # read-only: the relaunch screen as a preview, which cannot confirm
        await pilot.pause(0.3)
        verdict = app.screen.query_one("#verdict")
        end = time.monotonic() + 120  # the host's own SGLang answers in 10-30 s (it imports torch)
        while "asking the host's own SGLang" in str(verdict.render()) and time.monotonic() < end:
            await pilot.pause(0.5)
        said = str(verdict.render())
        assert "judged by the host's own SGLang" in said and "SGLang would start" in said, said
        if os.environ.get("SPECTUI_REAL_SCREENSHOT"):
            Path(os.environ["SPECTUI_REAL_SCREENSHOT"] + ".relaunch.svg").write_text(app.export_screenshot())
        preview = app.export_screenshot().replace("&#160;", " ")
        assert "only supports CUDA" not in preview  # a CPU source build is not judged by 0.5.16's CUDA rule
        await pilot.press("escape")
    load.join(timeout=120)
    await asyncio.sleep(0)


def test_sigkill_is_gone_and_the_dead_server_starts_again(srv: RealServer) -> None:
    pid = main_pid(srv)
    pgid = os.getpgid(pid)
    env = {**os.environ, "SPECTUI_HEALTH_INTERVAL": "0.5"}
    proc = subprocess.Popen([sys.executable, "-m", "spectui.cli", "watch", "local", "--pid", str(pid), "--jsonl",
                             "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    states: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            ev = json.loads(line)
            if ev["type"] == "health":
                states.append(ev["state"])
                if ev["state"] == "healthy" and "gone" not in states:
                    os.killpg(pgid, signal.SIGKILL)  # the kernel's OOM killer, as far as the log can tell
                if ev["state"] == "gone":
                    break
    finally:
        proc.kill()
        proc.wait()
    assert states[:1] == ["healthy"] and states[-1] == "gone", states
    end = time.monotonic() + 30
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.2)
    check = json.loads(spectui("check", str(srv.log), "--json").stdout)
    assert check["phase"] != "stopped"  # no shutdown line: a kill, not a stop
    # Started again from what is known of it (the log's launch, the history), with its own environment.
    # Nothing recorded this server's environment (serve.sh started it, not spectui): the plan says so, and
    # the operator gives what the kit's server needs, as the note asks.
    dry = spectui("relaunch", f"local:{srv.log}", "--dry-run", "--json", timeout=400)
    assert dry.returncode == 0, dry.stdout[-1500:] + dry.stderr[-1500:]
    plan = json.loads(dry.stdout)
    assert plan.get("from_known") is True and "environment" in plan.get("known_note", ""), plan.get("known_note")
    assert plan["catalogue"]["source"] == "host-resolution" and plan["verdict"] == "ok", plan["verdict_detail"]
    from realkit import prefix, server_env

    needed = {"SGLANG_USE_CPU_ENGINE": "1", "LD_PRELOAD": str(prefix() / "venv" / "lib" / "libiomp5.so"),
              "TVM_FFI_CACHE_DIR": str(prefix() / "tvm-ffi-cache"), "HF_HUB_OFFLINE": "1"}
    if "PYTHONPATH" in server_env():
        needed["PYTHONPATH"] = server_env()["PYTHONPATH"]
    sets = [w for k, v in needed.items() for w in ("--set-env", f"{k}={v}")]
    out = spectui("relaunch", f"local:{srv.log}", *sets, "--yes", "--json", timeout=400)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res.get("healthy") is True or res.get("outcome") in ("healthy", "ok"), res
    assert get(srv.port, "/health")[0] == 200
    (new,) = srv.main_pids()
    assert new != pid
    assert KEY not in out.stdout
