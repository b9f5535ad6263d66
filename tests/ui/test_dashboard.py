"""Dashboard panels and key paths through the real app, real pipeline, real rules and real corpus logs."""

from __future__ import annotations

import re

from textual.command import CommandPalette
from ui_kit import corpus_lines, replay_app, settle

from spectui.core.launch import parse_command
from spectui.ui.widgets.config_panel import ConfigPanel
from spectui.ui.widgets.diagnoses import DiagnosesPanel
from spectui.ui.widgets.header import HeaderBar
from spectui.ui.widgets.spec_panel import SpecPanel

# The seed incident's launch (seeds/002, message 4344): topk 1, draft tokens 16, steps 1.
SEED_LAUNCH = ("python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp-size 8 "
               "--speculative-algorithm EAGLE3 --speculative-draft-model-path /data/eagle3/4 "
               "--speculative-eagle-topk 1 --speculative-num-draft-tokens 16 --speculative-num-steps 1")


def rendered(widget) -> str:
    from rich.console import Console

    console = Console(width=widget.size.width or 100, record=True, color_system=None)
    console.print(widget.render())
    return console.export_text()


async def test_spec_panel_shows_accept_len_from_the_log(seed_lines) -> None:
    # Real lines: https://github.com/sgl-project/SpecForge/pull/269 (corpus 051)
    accept = [float(m) for m in re.findall(r"accept len: ([0-9.]+)", "\n".join(seed_lines))]
    app = replay_app(seed_lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        text = rendered(app.dashboard.query_one(SpecPanel))
        assert f"accept len {accept[-1]:.2f}" in text
        assert f"n={len(accept)}" in text
        header = rendered(app.dashboard.query_one(HeaderBar))
        assert "SERVING" in header and "replay" in header


async def test_dp_ranks_are_summed() -> None:
    # Real lines: https://github.com/sgl-project/sglang/pull/6081 (corpus 003): one line per DP rank.
    lines = corpus_lines("003-mtp-dp-attention-accept-len.log")
    ranks = {m for m in re.findall(r" DP(\d+) ", "\n".join(lines))}
    app = replay_app(lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert f"Σ {len(ranks)} DP ranks" in rendered(app.dashboard.query_one(SpecPanel))


async def test_config_panel_marks_the_seed_override() -> None:
    app = replay_app([], launch=parse_command(SEED_LAUNCH), version="0.5.6.post2")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        panel = app.dashboard.query_one(ConfigPanel)
        rows = {r.key: r for r in panel.view.rows}
        assert rows["speculative_num_draft_tokens"].requested == 16
        assert rows["speculative_num_draft_tokens"].effective == 2
        assert rows["speculative_num_draft_tokens"].differs
        assert not rows["speculative_num_steps"].differs
        text = rendered(panel)
        assert "16" in text and "2 ⚠ overridden" in text


async def test_diagnosis_select_explains_and_fix_opens_relaunch_prefilled() -> None:
    from spectui.ui.screens.explain import ExplainScreen
    from spectui.ui.screens.relaunch import RelaunchScreen

    app = replay_app([], launch=parse_command(SEED_LAUNCH), version="0.5.6.post2")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        panel = app.dashboard.query_one(DiagnosesPanel)
        rules = [d.rule for d in panel.diagnoses]
        assert rules, "the seed launch must produce a diagnosis from the config alone"
        target = next(d for d in panel.diagnoses if d.fix is not None)
        panel.highlighted = panel.diagnoses.index(target)
        await pilot.press("d", "enter")
        assert isinstance(app.screen, ExplainScreen)
        await pilot.press("escape")
        await pilot.press("d", "f")
        await pilot.pause()
        assert isinstance(app.screen, RelaunchScreen)
        for flag, value in dict(target.fix.set).items():
            dest = flag.lstrip("-").replace("-", "_")
            assert app.screen.draft.values.get(dest) == str(value)


async def test_relaunch_screen_live_diff_and_verdict() -> None:
    from textual.widgets import Input

    from spectui.ui.screens.relaunch import RelaunchScreen

    app = replay_app([], launch=parse_command(SEED_LAUNCH), version="0.5.6.post2")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        screen = app.screen
        assert isinstance(screen, RelaunchScreen)
        steps = screen.query_one("#f-speculative_num_steps", Input)
        steps.value = "15"
        await pilot.pause()
        assert [(c.flag, c.old, c.new) for c in screen.evaluation.changes] == [
            ("--speculative-num-steps", "1", "15")]
        assert screen.evaluation.resolution.effective["speculative_num_draft_tokens"] == 16
        assert screen.evaluation.launchable
        # An invalid edit is caught before launch: topk/draft tokens without steps (seed 002, 2nd crash).
        steps.value = ""
        await pilot.pause()
        assert screen.evaluation.resolution.outcome == "error"
        assert not screen.evaluation.launchable
        assert "AssertionError" in screen.evaluation.text.plain


async def test_read_only_disables_relaunch() -> None:
    from textual.widgets import Button

    app = replay_app([], launch=parse_command(SEED_LAUNCH), read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        assert app.screen.query_one("#go", Button).disabled
        assert "read-only" in rendered(app.dashboard.query_one(HeaderBar))


async def test_help_history_palette_and_quit(seed_lines) -> None:
    from spectui.ui.screens.help import HelpScreen
    from spectui.ui.screens.history import HistoryScreen

    app = replay_app(seed_lines)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "h")
        assert isinstance(app.screen, HistoryScreen)
        table = app.screen.query_one("#launches")
        assert table.row_count == 1
        await pilot.press("escape", "colon")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"history")
        from textual.command import CommandList
        commands = app.screen.query_one(CommandList)
        for _ in range(200):  # the palette searches in a worker: wait for its hit to be highlighted
            if commands.option_count and commands.highlighted is not None:
                break
            await pilot.pause(0.05)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("escape", "q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_mouse_click_selects_a_diagnosis() -> None:
    from spectui.ui.screens.explain import ExplainScreen

    app = replay_app([], launch=parse_command(SEED_LAUNCH), version="0.5.6.post2")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert await pilot.click(DiagnosesPanel, offset=(5, 1))
        await pilot.pause()
        assert isinstance(app.screen, ExplainScreen)
