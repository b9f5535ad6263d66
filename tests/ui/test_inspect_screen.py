"""The cockpit's `i`: the draft screen shows the inspection's findings (read in a worker), and the DRAFT rule
then joins them with the log's accept length."""

from __future__ import annotations

from pathlib import Path

from draftckpt import draft_config, eagle3_tensors, write_ckpt, write_target  # noqa: E402
from textual.widgets import Static
from ui_kit import replay_app, settle

from spectui.core.launch import parse_command  # noqa: E402
from spectui.ui.screens.draft import DraftScreen  # noqa: E402


def decode_lines(accepts: list[float]) -> list[str]:
    return ["[2025-12-03 09:59:59] The server is fired up and ready to roll!"] + [
        f"[2025-12-03 10:00:{i:02d} TP0] Decode batch, #running-req: 1, #token: {100 + 40 * i}, token usage: 0.01, "
        f"accept len: {a:.2f}, cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0, "
        for i, a in enumerate(accepts)]


async def wait_result(pilot, screen: DraftScreen) -> None:
    for _ in range(300):
        await pilot.pause(0.02)
        if screen.result is not None or screen.error is not None:
            return
    raise AssertionError("the inspection did not finish")


def shown(screen: DraftScreen, wid: str) -> str:
    return str(screen.query_one(wid, Static).render())


async def test_i_shows_the_drafts_findings_and_feeds_the_draft_rule(tmp_path: Path) -> None:
    t = write_target(tmp_path / "target")
    d = write_ckpt(tmp_path / "draft", draft_config(), eagle3_tensors())
    launch = parse_command(f"python -m sglang.launch_server --model-path {t} --speculative-algorithm EAGLE "
                           f"--speculative-draft-model-path {d} --speculative-num-steps 3 "
                           "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
    app = replay_app(decode_lines([1.0] * 8), launch=launch, version="0.5.6")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert "DRAFT001" not in {x.rule for x in app.cockpit.pipeline.engine.diagnoses}
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, DraftScreen)
        await wait_result(pilot, screen)
        assert screen.error is None
        findings = shown(screen, "#draft-findings")
        assert "ERROR" in findings and "draft-algorithm" in findings
        assert "fix: launch with --speculative-algorithm EAGLE3" in findings
        summary = shown(screen, "#draft-summary")
        assert str(d) in summary and "sglang-eagle3" in summary and "SGLang 0.5.6" in summary
        diags = {x.rule: x for x in app.cockpit.pipeline.engine.diagnoses}
        assert diags["DRAFT001"].fix is not None and diags["DRAFT001"].fix.set == {"--speculative-algorithm": "EAGLE3"}
        await pilot.press("escape")
        assert not isinstance(app.screen, DraftScreen)


async def test_i_without_a_launch_says_why(tmp_path: Path) -> None:
    app = replay_app(decode_lines([2.0] * 3))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("i")
        screen = app.screen
        assert isinstance(screen, DraftScreen)
        await wait_result(pilot, screen)
        assert "launch command of this server is not known" in shown(screen, "#draft-summary")
