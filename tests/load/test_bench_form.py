"""The cockpit's bench form (`b`, #24): defaults filled, nothing sent until enter, bad fields refused in
place, the workload offered (random:IN:OUT included) — through Textual's pilot, against the real simulator."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from load_kit import run_sim
from textual.app import App

from spectui.sources.local import LocalHost
from spectui.ui.screens.bench import BenchScreen, parse_form

pytestmark = pytest.mark.timeout(90)


class Cockpit:
    baseline, baseline_source = None, None

    def set_baseline(self, tps: Any, source: str) -> None:
        self.baseline, self.baseline_source = tps, source


class Session:
    label, replay, pid, server = "local", False, None, None

    def __init__(self, host: Any, port: int) -> None:
        self.host, self.server_port = host, port


class Host(App[None]):
    def __init__(self, screen: BenchScreen) -> None:
        super().__init__()
        self.bench = screen

    def on_mount(self) -> None:
        self.push_screen(self.bench)


def test_form_fields_are_checked() -> None:
    kw, prompts = parse_form({"requests": "8", "concurrency": "2", "max_tokens": "16", "workload": "code"})
    assert kw == {"requests": 8, "concurrency": 2, "max_tokens": 16} and prompts.name == "code"
    kw, prompts = parse_form({"requests": "3", "concurrency": "1", "max_tokens": "9", "workload": "random:20:5"})
    assert kw["ignore_eos"] is True and {(p.input_len, p.output_len) for p in prompts.prompts} == {(20, 5)}
    for bad, text in [({"requests": "0"}, "requests"), ({"concurrency": "x"}, "concurrency"),
                      ({"workload": "random:5"}, "random:IN:OUT"), ({"workload": "/no/such.jsonl"}, "no such file")]:
        with pytest.raises(ValueError, match=text):
            parse_form({"requests": "4", "concurrency": "2", "max_tokens": "8", "workload": "mixed", **bad})


async def wait_for(predicate: Any, pilot: Any, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await pilot.pause(0.05)


async def test_b_opens_a_form_and_runs_only_when_asked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with run_sim() as url:
        port = int(url.rsplit(":", 1)[1])
        host = LocalHost()
        await host.connect()
        try:
            screen = BenchScreen(Session(host, port), Cockpit())
            app = Host(screen)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                assert screen.form_values() == {"requests": "32", "concurrency": "4", "max_tokens": "128",
                                                "workload": "mixed"}  # the defaults, filled in
                await pilot.pause(0.5)
                assert not screen.started and screen.result is None  # nothing sent yet
                # a bad value is refused in place
                screen.query_one("#bench-requests").value = "0"
                await pilot.press("enter")
                await pilot.pause()
                assert not screen.started and "at least 1" in str(screen.query_one("#bench-progress").render())
                for key, value in (("requests", "6"), ("concurrency", "2"), ("max_tokens", "12"),
                                   ("workload", "random:16:12")):
                    screen.query_one(f"#bench-{key}").value = value
                await pilot.press("ctrl+s")
                await wait_for(lambda: screen.result is not None or screen.error is not None, pilot)
                assert screen.error is None, screen.error
                out = screen.result
                assert out["requests"]["ok"] == 6 and out["workload"]["concurrency"] == 2
                assert out["workload"]["prompts"] == "random:16:12:1" and out["output_tokens"] == 6 * 12
                assert "output tok/s" in str(screen.query_one("#bench-result").render())
        finally:
            await host.close()


def test_form_offers_the_multi_turn_workload() -> None:
    kw, prompts = parse_form({"requests": "3", "concurrency": "2", "max_tokens": "9",
                              "workload": "multi-turn:4:6:5"})
    assert kw["ignore_eos"] is True and len(prompts) == 3 and prompts.turns == 4
    assert all(p.output_len == 5 and [len(q.split()) for q in p.follow_ups] == [6, 6, 6] for p in prompts.prompts)
    for bad in ("multi-turn:3", "multi-turn:0:5:5", "multi-turn:a:5:5"):
        with pytest.raises(ValueError, match="multi-turn:TURNS:Q:OUT"):
            parse_form({"requests": "4", "concurrency": "2", "max_tokens": "8", "workload": bad})


async def test_a_multi_turn_bench_from_the_form(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with run_sim() as url:
        host = LocalHost()
        await host.connect()
        try:
            screen = BenchScreen(Session(host, int(url.rsplit(":", 1)[1])), Cockpit())
            async with Host(screen).run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                for key, value in (("requests", "2"), ("concurrency", "2"), ("max_tokens", "8"),
                                   ("workload", "multi-turn:3:5:6")):
                    screen.query_one(f"#bench-{key}").value = value
                await pilot.press("enter")
                await wait_for(lambda: screen.result is not None or screen.error is not None, pilot)
                assert screen.error is None, screen.error
                out = screen.result
                assert out["workload"]["num_turns"] == 3 and out["workload"]["requests"] == 2
                assert out["requests"]["ok"] == 6 and out["output_tokens"] == 6 * 6
                assert "2 conversations of 3 turns" in str(screen.query_one("#bench-result").render())
        finally:
            await host.close()
