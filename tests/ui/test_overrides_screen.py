"""#23: an override is never "ok". On the relaunch screen, draft tokens 6 with topk 1 and steps 1 is the
seed incident recreated: the verdict is `overridden` (yellow), names what SGLang will use and why, and
gives the fix; the fix itself turns the verdict green again. Confirm names the override."""

from __future__ import annotations

from textual.widgets import Button, Input

from spectui.core.launch import parse_command
from spectui.sources.base import ServerProcess
from spectui.ui.app import SpectuiApp
from spectui.ui.session import Session, replay_lines

ARGV = ("python3", "-m", "sglang.launch_server", "--model-path", "/m", "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", "/d", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4")


def _styles_of(text, needle: str) -> set[str]:
    start = text.plain.index(needle)
    return {str(span.style) for span in text.spans if span.start <= start < span.end}


async def test_draft_tokens_six_with_topk_one_is_overridden_not_ok() -> None:
    from spectui.ui.screens.relaunch import RelaunchScreen

    server = ServerProcess(pid=4242, pgid=4242, argv=ARGV, env={}, cwd="/root", log_path="/l/s.log", port=30000,
                           host_addr="127.0.0.1", program="python -m sglang.launch_server")
    session = Session(label="gpu1", log_path="recorded.log", server=server, launch=parse_command(list(ARGV)),
                      tail_factory=replay_lines([]), replay=True, probe_gpus=False)
    app = SpectuiApp(session, clock=lambda: 1000.0)
    async with app.run_test(size=(140, 48)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RelaunchScreen)
        assert "✓ SGLang would start" in screen.evaluation.text.plain  # 3/1/4: every value as asked
        screen.query_one("#f-speculative_num_steps", Input).value = "1"
        screen.query_one("#f-speculative_num_draft_tokens", Input).value = "6"
        await pilot.pause()
        text = screen.evaluation.text
        assert "✓ SGLang would start" not in text.plain
        line = "draft tokens: asked 6, SGLang will use 2, because topk 1 makes it steps + 1"
        assert "overridden" in text.plain and line in text.plain, text.plain
        assert any("yellow" in s for s in _styles_of(text, "overridden"))
        assert "to get what you asked: --speculative-num-steps 5" in text.plain
        assert screen.evaluation.resolution.verdict == "overridden"
        # Confirm shows it: the armed button and the confirmation name the override.
        await pilot.click("#go")
        await pilot.pause()
        assert "overrides" in str(screen.query_one("#go", Button).label)
        # The fix it names gets what was asked: 5/1/6, no override, green again.
        screen.query_one("#f-speculative_num_steps", Input).value = "5"
        await pilot.pause()
        assert screen.evaluation.resolution.verdict == "ok"
        assert "✓ SGLang would start" in screen.evaluation.text.plain
        assert screen.evaluation.resolution.effective["speculative_num_draft_tokens"] == 6
