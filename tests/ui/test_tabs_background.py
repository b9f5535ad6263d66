"""Hidden tabs' parse on the event loop (ui/multi/slicer.py): time-boxed slices, the loop's other work first,
every line fed once and in order; the tabbed app's hidden tabs go through it; one shared local poller."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path

from ui_kit import sim_lines, streaming

from spectui.sources.local import LocalHost, SharedPoll
from spectui.ui.controller import CockpitUpdate
from spectui.ui.multi.app import TabbedApp, TabSpec
from spectui.ui.multi.background import BackgroundParse
from spectui.ui.multi.slicer import Slicer
from spectui.ui.session import Session


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class CountingCockpit:
    """Feeds cost `cost` seconds a line on the fake clock; remembers every line it was fed."""

    def __init__(self, clock: FakeClock, cost: float, slow: dict[str, float] | None = None) -> None:
        self.clock, self.cost, self.slow = clock, cost, slow or {}
        self.fed: list[str] = []
        self.calls = 0
        self.base = 1  # the pane's number of the first line fed
        self.offset = 0  # view line number = stream line number + offset (ui.controller.Cockpit)

    def feed(self, lines, now, first_line=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        self.clock.t += sum(self.slow.get(line, self.cost) for line in lines)
        first = len(self.fed) + self.base
        self.fed.extend(lines)
        return CockpitUpdate(kinds=((first, first + len(lines) - 1, "other"),), new_diagnoses=(f"d{first}",))


async def test_a_slice_never_runs_past_its_budget_and_every_line_is_fed_once_in_order() -> None:
    clock = FakeClock()
    slicer = Slicer(budget=0.004, max_defer=0.0, clock=clock)
    slicer.per_line = 0.00005  # a wrong first estimate (the real cost is 4x): the first slice may overrun
    slices: list[tuple[int, float]] = []
    slicer.on_slice = lambda lines, spent: slices.append((lines, spent))
    cockpit = CountingCockpit(clock, cost=0.0002)
    batch = [f"line {i}" for i in range(3000)]
    (texts, width), update = await slicer.analyse(cockpit, batch, now=1.0)
    assert cockpit.fed == batch and texts == batch and width == len("line 2999")
    assert sum(n for n, _ in slices) == len(batch) and len(slices) > 100
    assert all(spent <= 0.004 + 1e-9 for _, spent in slices[2:])  # once the cost is learnt
    assert max(n for n, _ in slices[2:]) <= 0.004 / 0.0002
    # merged as one parse would return it: every chunk's kinds and new diagnoses, in order
    assert [k[0] for k in update.kinds] == sorted(k[0] for k in update.kinds) and len(update.kinds) == cockpit.calls
    assert update.kinds[-1][1] == len(batch) and len(update.new_diagnoses) == cockpit.calls


async def test_one_line_dearer_than_a_budget_is_fed_alone_and_the_batch_goes_on() -> None:
    clock = FakeClock()
    slicer = Slicer(budget=0.004, max_defer=0.0, clock=clock)
    slices: list[tuple[int, float]] = []
    slicer.on_slice = lambda lines, spent: slices.append((lines, spent))
    batch = [f"l{i}" for i in range(400)]
    cockpit = CountingCockpit(clock, cost=0.0001, slow={"l200": 0.015})  # a server_args= line
    await slicer.analyse(cockpit, batch, now=0.0)
    assert cockpit.fed == batch
    assert sum(1 for _, spent in slices if spent > 0.004 + 1e-9) == 1  # only the slice holding that line


async def test_a_slice_waits_while_the_loop_has_other_work_ready() -> None:
    slicer = Slicer(budget=0.002, max_defer=1.0)
    order: list[str] = []

    class Cockpit:
        offset = 0

        def feed(self, lines, now, first_line=None):  # type: ignore[no-untyped-def]
            order.append("slice")
            return CockpitUpdate()  # as Cockpit.feed: always an update

    async def busy() -> None:  # something ready on every turn of the loop, for 30 turns
        for _ in range(30):
            order.append("other")
            await asyncio.sleep(0)

    other = asyncio.ensure_future(busy())
    await asyncio.sleep(0)
    await slicer.analyse(Cockpit(), ["a line"], now=0.0)
    await other
    assert order.index("slice") > order.index("other") + 25  # it went after the other task's turns


async def test_a_batch_shown_midway_is_finished_in_a_thread() -> None:
    clock = FakeClock()
    slicer = Slicer(budget=0.001, max_defer=0.0, clock=clock)
    cockpit = CountingCockpit(clock, cost=0.0002)
    shown = {"now": False}
    slicer.on_slice = lambda lines, spent: shown.update(now=True)
    batch = [f"x{i}" for i in range(2000)]
    (texts, _w), update = await slicer.analyse(cockpit, batch, now=0.0, shown=lambda: shown["now"])
    assert slicer.slices == 1 and cockpit.fed == batch and texts == batch
    assert update.kinds[-1][1] == len(batch)


async def test_hidden_tabs_are_parsed_in_slices_and_lose_no_line() -> None:
    lines = sim_lines()
    sessions = [Session(label=f"s{i}", log_path="x.log", tail_factory=streaming(lines, 30, 50, 0.02),
                        probe_gpus=False)
                for i in range(3)]
    app = TabbedApp([TabSpec(s.label, s) for s in sessions])
    total = 30 * 50
    async with app.run_test(size=(160, 48)) as pilot:
        hidden = [t.dashboard for t in app.tabs[1:]]
        for _ in range(200):
            if all(d.query_one("LogView").last_line_no == total and not d._pending and not d.processing
                   for d in hidden):
                break
            await pilot.pause(0.05)
        slicer = app.background.slicer
        assert slicer.slices > 0  # parsed on the loop, in slices
        for d in hidden:
            assert d.query_one("LogView").last_line_no == total and not d._pending
            assert d.last_update is not None and d.last_update.snapshot is not None
        assert app.background.frozen is True
        await pilot.press("2")
        log = app.tabs[1].dashboard.query_one("LogView")
        for _ in range(200):  # the held lines go on the pane once the tab is shown
            if log.line_count == total:
                break
            await pilot.pause(0.05)
        assert log.line_count == total and log.text_of(total) == log._texts[-1]
    assert app.background.frozen is False and gc.get_freeze_count() == 0  # unfrozen at exit


async def test_one_shared_poller_wakes_each_tail_on_its_own_change(tmp_path: Path) -> None:
    paths = [tmp_path / f"s{i}.log" for i in range(5)]
    for p in paths:
        p.write_text("x\n")
    poll = SharedPoll(interval=0.01, idle_interval=0.05, quiet_after=10)
    watches = [poll.watch(str(p)) for p in paths]
    assert await watches[0].wait(0.1) is False
    with paths[3].open("a") as fh:
        fh.write("y\n")
    assert await watches[3].wait(5.0) is True
    assert await watches[2].wait(0.05) is False  # not woken by another path's change
    with paths[1].open("a") as fh:
        fh.write("z\n")
    await asyncio.sleep(0.1)  # changed while nobody waited: kept for the next wait
    assert await watches[1].wait(5.0) is True
    fresh = tmp_path / "new"
    fresh.write_text("n\n")
    os.replace(fresh, paths[4])  # rotation by rename
    assert await watches[4].wait(5.0) is True
    for w in watches:
        await w.close()
    assert not poll.watches and poll._handle is None


async def test_quiet_tails_on_one_poller_cost_one_timer_not_one_each(tmp_path: Path) -> None:
    host = LocalHost()
    notifiers = []
    for i in range(10):
        p = tmp_path / f"q{i}.log"
        p.write_text("q\n")
        notifiers.append(await host.notifier(str(p)))
    poll = notifiers[0].poll
    assert all(n.poll is poll for n in notifiers)
    poll.quiet_after = 0.0  # quiet from the start: the idle cadence
    start = poll.polls
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    results = await asyncio.gather(*(n.wait(1.0) for n in notifiers))
    waited = loop.time() - t0
    assert results == [False] * 10
    assert 1.0 - poll.coalesce - 0.02 <= waited <= 1.5  # never late; at most `coalesce` early
    assert poll.polls - start <= 4  # 0.5 s cadence over 1 s, every path in each call
    for n in notifiers:
        await n.close()


def test_background_parse_without_a_running_loop_is_inert() -> None:
    bg = BackgroundParse()
    bg.unfreeze()  # never frozen: nothing to undo
    assert bg.frozen is None and gc.get_freeze_count() == 0


async def test_with_the_panes_line_numbers_each_chunks_kinds_come_as_one_list_per_chunk() -> None:
    clock = FakeClock()
    slicer = Slicer(budget=0.004, max_defer=0.0, clock=clock)
    cockpit = CountingCockpit(clock, cost=0.0002)
    cockpit.base = 1001
    batch = [f"k{i}" for i in range(300)]
    _prepared, update = await slicer.analyse(cockpit, batch, now=0.0, first_no=1001)
    marked: dict[int, str] = {}
    for first, last, kind in update.kinds:
        for no in range(first, last + 1):
            marked[no] = kind if isinstance(kind, str) else kind[no - first]
    assert all(not isinstance(kind, str) for _f, _l, kind in update.kinds)
    assert sorted(marked) == list(range(1001, 1301)) and set(marked.values()) == {"other"}


async def test_a_tab_whose_parse_falls_behind_stops_reading_and_loses_no_line(monkeypatch) -> None:
    """A log arriving faster than a hidden tab parses it: the lines read but not parsed stay bounded (the tail
    is not read until half the backlog is parsed; the rest waits in the file), and every line arrives."""
    from spectui.sources.base import ConnState, TailLines, TailState
    from spectui.ui.screens import dashboard

    monkeypatch.setattr(dashboard, "MAX_PENDING_LINES", 3000)
    lines, size, chunks = sim_lines(), 500, 40  # 20,000 lines offered at once

    async def flood(_path: str):  # type: ignore[no-untyped-def]
        yield TailState(ConnState.CONNECTED, "test")
        for c in range(chunks):
            yield TailLines(tuple(lines[(c * size + i) % len(lines)] for i in range(size)), c * size + 1, 0)
        await asyncio.sleep(3600)

    sessions = [Session(label="shown", log_path="a.log", tail_factory=_quiet, probe_gpus=False),
                Session(label="flood", log_path="b.log", tail_factory=flood, probe_gpus=False)]
    app = TabbedApp([TabSpec(s.label, s) for s in sessions])
    total, most = chunks * size, 0
    async with app.run_test(size=(160, 48)) as pilot:
        hidden = app.tabs[1].dashboard
        for _ in range(1200):
            most = max(most, hidden._pending_count)
            if hidden.query_one("LogView").last_line_no == total and not hidden._pending and not hidden.processing:
                break
            await pilot.pause(0.02)
        assert hidden.query_one("LogView").last_line_no == total  # every line, none lost
        assert most <= 3000 + size  # at most one read past the bound (without it: all 20,000 at once)


async def _quiet(_path: str):  # type: ignore[no-untyped-def]
    from spectui.sources.base import ConnState, TailState

    yield TailState(ConnState.CONNECTED, "test")
    await asyncio.sleep(3600)
