"""#24/#22: spectui's own probes (GET /health, /server_info, /metrics in SGLang's access log) are hidden from
the log pane at start; `p` shows them and hides them again; the gutter keeps the file's own numbers."""

from __future__ import annotations

from ui_kit import replay_app, settle

from spectui.ui.widgets.log_lines import is_probe
from spectui.ui.widgets.log_view import LogView

ACCESS = '[2026-11-30 15:16:{s:02d}] INFO:     127.0.0.1:{p} - "GET {path} HTTP/1.1" 200 OK'
PROBE_PATHS = ("/health", "/server_info", "/metrics", "/get_server_info", "/health_generate")


def probe_log(seed_lines: list[str]) -> tuple[list[str], int]:
    """The seed log with a probe line after every line (as a cockpit polling each second leaves them)."""
    out: list[str] = []
    for i, line in enumerate(seed_lines):
        out.append(line)
        out.append(ACCESS.format(s=i % 60, p=40000 + i, path=PROBE_PATHS[i % len(PROBE_PATHS)]))
    out.append(ACCESS.format(s=0, p=1, path="/v1/chat/completions").replace("GET", "POST"))  # a real request
    return out, len(seed_lines)


def rows(log: LogView) -> list[str]:
    return ["".join(seg.text for seg in log._render_row(r)) for r in range(log.row_count)]


async def test_probe_lines_are_hidden_until_p(seed_lines) -> None:
    lines, n_probes = probe_log(seed_lines)
    app = replay_app(lines)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        assert log.line_count == len(lines) and log.probes == n_probes
        shown = rows(log)
        assert len(shown) == len(lines) - n_probes
        assert not any(is_probe(r) for r in shown)
        assert "POST /v1/chat/completions" in shown[-1]  # a client's request is not a probe
        # the gutter is the file's number: the last line is the file's last, not its rank in the view
        assert shown[-1].split()[0] == str(len(lines))
        assert f"{n_probes} probe lines hidden (p shows)" in str(log.border_title)

        await pilot.press("p")
        await pilot.pause()
        shown = rows(log)
        assert len(shown) == len(lines)
        assert sum(1 for r in shown if is_probe(r)) == n_probes
        assert f"{n_probes} probe lines shown (p hides)" in str(log.border_title)

        await pilot.press("p")
        await pilot.pause()
        assert len(rows(log)) == len(lines) - n_probes


async def test_hidden_probes_are_no_search_hits_and_the_filter_sees_them_with_p(seed_lines) -> None:
    lines, n_probes = probe_log(seed_lines)
    app = replay_app(lines)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        log.set_search("GET /")
        assert log.search_count() == (None, 0)
        log.set_filter("health")
        assert log.filter_count() == 0
        await pilot.press("p")
        await pilot.pause()
        health = sum(1 for t in lines if "GET /health" in t)
        assert log.filter_count() == health and health > 0


def test_probe_lines_are_recognised_by_path_only() -> None:
    assert is_probe('INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 200 OK')
    assert is_probe('[x] INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1" 200 OK')
    assert is_probe('INFO:     127.0.0.1:5 - "GET /server_info?x=1 HTTP/1.1" 200 OK')
    assert not is_probe('INFO:     127.0.0.1:5 - "GET /model_info HTTP/1.1" 200 OK')
    assert not is_probe('INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK')
    assert not is_probe('INFO:     127.0.0.1:5 - "GET /metricsfoo HTTP/1.1" 200 OK')
    assert not is_probe("Decode batch, health check passed")


def _start_sim():  # type: ignore[no-untyped-def]
    """tests/sim/conftest.py's start_sim (a real `python -m spectui.sim` process on a free port)."""
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("simconf", Path(__file__).parents[1] / "sim" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["simconf"] = mod  # its dataclass looks itself up there
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


async def test_a_real_servers_probe_lines_are_hidden(tmp_path) -> None:
    """The simulator's own access log, after spectui's real ServerProbe asked /health, /server_info and
    /metrics and a client sent one chat request: the pane holds the request, not the probes (#22)."""
    import asyncio
    import os
    import signal

    import httpx

    from spectui.sources.http import ServerProbe
    from spectui.sources.local import LocalHost
    from spectui.ui.session import read_recorded_log

    simconf = _start_sim()
    sim = simconf.start_sim([*simconf.EAGLE3, *simconf.CHAIN3, *simconf.FAST, "--enable-metrics"],
                            tmp_path / "server.log")
    try:
        await asyncio.to_thread(sim.wait_ready)
        probe = ServerProbe(LocalHost(read_only=True), sim.port)
        try:
            for _ in range(3):
                await probe.health()
                await probe.server_info()
                await probe.metrics()
        finally:
            await probe.close()
        async with httpx.AsyncClient(base_url=sim.url, timeout=30) as client:
            resp = await client.post("/v1/chat/completions", json={
                "model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
            assert resp.status_code == 200
        await asyncio.to_thread(sim.wait_for, "POST /v1/chat/completions")
    finally:
        if sim.proc.poll() is None:
            os.killpg(sim.proc.pid, signal.SIGKILL)
            sim.proc.wait(10)
    lines = read_recorded_log(str(sim.log))
    probes = [t for t in lines if is_probe(t)]
    assert len(probes) >= 9, lines[-30:]  # every one of spectui's requests is recognised
    app = replay_app(lines)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        log = app.dashboard.query_one(LogView)
        shown = rows(log)
        assert log.probes == len(probes) and len(shown) == len(lines) - len(probes)
        assert not any(t in r for r in shown for t in ('"GET /health', '"GET /server_info', '"GET /metrics'))
        assert any('"POST /v1/chat/completions' in r for r in shown)
