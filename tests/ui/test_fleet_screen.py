"""The cockpit's fleet screen (key 0): a FleetSnapshot-returning collector (fake here; a real Prometheus in
test_fleet_screen_prom.py), refreshed in a worker, worst first; enter opens the instance in a new tab."""

from __future__ import annotations

import asyncio

import pytest
from ui_kit import corpus_lines  # noqa: E402

from spectui.fleet import FleetEntry, FleetSnapshot, InstanceMetrics, diagnose  # noqa: E402
from spectui.ui.multi.app import TabbedApp, TabSpec  # noqa: E402
from spectui.ui.screens.fleet import FleetScreen, FleetSource, instance_host, read_fleet_map  # noqa: E402
from spectui.ui.session import Session, replay_lines  # noqa: E402
from spectui.ui.widgets.fleet_table import FleetTable  # noqa: E402


def entry(instance: str, **values) -> FleetEntry:
    m = InstanceMetrics(job="sglang", instance=instance, **values)
    return FleetEntry(m, diagnose(m))


def snapshot(n: int) -> FleetSnapshot:
    entries = [
        entry("10.0.0.9:30000", up=False, scrape_error="connection refused"),
        entry("10.0.0.5:30000", up=True, accept_len=1.1, accept_rate=0.05, gen_tokens_per_s=300.0, running=4,
              queued=0, steps=3, metric_names=frozenset({"sglang:num_running_reqs"})),
        entry("gpu7:30000", up=True, accept_len=3.1, accept_rate=0.7, gen_tokens_per_s=900.0 + n, running=8,
              queued=0, steps=3, metric_names=frozenset({"sglang:num_running_reqs"})),
    ]
    return FleetSnapshot("http://prom:9090", "", entries, taken_at=float(n))


def replay_session(label: str) -> Session:
    lines = corpus_lines("051-specforge-qwen25-7b-eagle3-accept-len-2.log")
    return Session(label=label, log_path="r.log", tail_factory=replay_lines(lines), replay=True, probe_gpus=False)


async def wait_for(predicate, pilot, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await pilot.pause(0.05)


def test_instance_host_and_map_file() -> None:
    assert instance_host("10.0.0.5:30000") == "10.0.0.5"
    assert instance_host("[fe80::1]:30000") == "fe80::1"
    assert instance_host("gpu1") == "gpu1"
    mapping = read_fleet_map("# instance -> ssh\n10.0.0.5:30000 root@gpu5\nsglang/gpu7:30000 = admin@gpu7\n\n")
    src = FleetSource(lambda: None, mapping=mapping)
    assert src.target_for("10.0.0.5:30000") == "root@gpu5"
    assert src.target_for("gpu7:30000", "sglang") == "admin@gpu7"
    assert src.target_for("10.0.0.6:30000") == "10.0.0.6"
    # a loopback instance runs where Prometheus runs: this machine, or Prometheus's host
    assert FleetSource(lambda: None, url="http://127.0.0.1:9090").target_for("127.0.0.1:30000") == "local"
    assert FleetSource(lambda: None, url="http://localhost:9090").target_for("[::1]:30000") == "local"
    assert FleetSource(lambda: None, url="http://prom.lab:9090").target_for("localhost:30000") == "prom.lab"
    assert FleetSource(lambda: None, url="http://prom.lab:9090", mapping={"localhost:30000": "root@gpu1"}
                       ).target_for("localhost:30000") == "root@gpu1"
    with pytest.raises(ValueError, match="line 1"):
        read_fleet_map("just-one-word")


async def test_fleet_screen_refreshes_and_enter_opens_a_tab() -> None:
    calls: list[int] = []

    def collect() -> FleetSnapshot:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("prometheus went away")  # said on the status line, then retried
        return snapshot(len(calls))

    opened: list[str] = []

    async def opener(target: str, port: int | None) -> TabSpec:
        opened.append(target)
        assert port == 30000  # the instance's port: picks the server on a host running several
        return TabSpec(target, replay_session(target))

    source = FleetSource(collect, interval=0.2, mapping={"10.0.0.5:30000": "root@gpu5"}, url="http://prom:9090")
    app = TabbedApp([TabSpec("gpu1", replay_session("gpu1"))], fleet=source, opener=opener, clock=lambda: 1000.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("0")
        await wait_for(lambda: isinstance(app.screen, FleetScreen) and app.screen.snapshot is not None, pilot)
        screen = app.screen
        table = screen.query_one(FleetTable)
        await wait_for(lambda: len(calls) >= 4, pilot)  # refreshed in its worker, through the error
        assert table.row_count == 3
        first = [str(c) for c in table.get_row_at(0)]
        assert first[0] == "10.0.0.9:30000" and first[2] == "DOWN" and "FLEET001" in first[-1]
        assert str(table.get_row_at(1)[0]) == "10.0.0.5:30000"
        table.move_cursor(row=1)
        await pilot.press("enter")  # the low-acceptance instance, mapped to root@gpu5
        await wait_for(lambda: len(app.tabs) == 2, pilot)
        assert opened == ["root@gpu5"]
        assert app.active == 1 and app.screen is app.tabs[1].dashboard and app.tabs[1].label == "root@gpu5"
        await pilot.press("0")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot)
        await wait_for(lambda: app.screen.snapshot is not None, pilot)
        app.screen.query_one(FleetTable).move_cursor(row=1)
        await pilot.press("enter")  # the same instance again: its tab is shown, not a second one
        try:
            await wait_for(lambda: app.screen is app.tabs[1].dashboard, pilot)
        except AssertionError:
            raise AssertionError((app.screen_stack, app.active, app.screen.focused, opened)) from None
        assert len(app.tabs) == 2 and opened == ["root@gpu5"]
        await pilot.press("0")
        await wait_for(lambda: isinstance(app.screen, FleetScreen), pilot)
        await pilot.press("escape")
        assert app.screen is app.tabs[1].dashboard


async def test_the_highlighted_instance_is_detailed_and_tab_keys_are_off_over_the_fleet() -> None:
    source = FleetSource(lambda: snapshot(1), interval=60, mapping={"10.0.0.5:30000": "root@gpu5"},
                         url="http://prom:9090")
    app = TabbedApp([TabSpec("gpu1", replay_session("gpu1"))], fleet=source, clock=lambda: 1000.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("0")
        await wait_for(lambda: isinstance(app.screen, FleetScreen) and app.screen.snapshot is not None, pilot)
        screen = app.screen
        detail = screen.query_one("#fleet-detail")
        await wait_for(lambda: "FLEET001" in str(detail.render()), pilot)
        assert "connection refused" in str(detail.render())  # the down instance's evidence
        screen.query_one(FleetTable).move_cursor(row=1)
        await wait_for(lambda: "10.0.0.5:30000" in str(detail.render()), pilot)
        text = str(detail.render())
        assert "accept len 1.10 of a possible 4 (steps 3)" in text and "FLEET005" in text
        assert "enter: open root@gpu5 over SSH" in text
        for key in ("r", "h", "b", "w"):  # would act on gpu1, hidden under the fleet: off here
            await pilot.press(key)
            await pilot.pause(0.1)
            assert app.screen is screen, key
        shown = [b.binding.action for b in app.active_bindings.values()
                 if b.binding.key == "r" and b.enabled and b.binding.show]
        assert not shown  # nor in the footer (the hidden off-notice binding is not shown)
        await pilot.press("escape")
        assert app.screen is app.tabs[0].dashboard
        assert app.check_action("relaunch", ()) is not False  # on the tab again


async def test_without_prometheus_the_fleet_key_says_how() -> None:
    app = TabbedApp([TabSpec("gpu1", replay_session("gpu1"))], clock=lambda: 1000.0)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("0")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, FleetScreen)
        assert any("--prometheus" in str(n.message) for n in app._notifications)
