"""The warning-says-a-value-changed family fires in every style SGLang logs those warnings: bare stderr before
logging is configured (<= 0.5.10), `[ts] text` (0.5.11+), `date LEVEL pid [file:line] text` (custom logging
config, corpus 036), and Python logging's default `WARNING:sglang.srt.server_args:text` (an embedding program
configured logging first). The texts are SGLang's own (tests/data/resolution)."""

from __future__ import annotations

import pytest

from spectui.core.log import Pipeline
from spectui.core.rules import RuleEngine, load_rules, parse_launch

RULES, _ = load_rules()
ADJUST = "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
MR48 = ("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
        "setting --max-running-requests.")
STYLES = {
    "bare": "{t}",
    "prefixed": "[2026-11-30 14:22:13] {t}",
    "prefixed-warning": "[2026-11-30 14:22:13] WARNING: {t}",
    "pylog-custom": "2025-12-04 20:35:53 WARNING 151972 [server_args.py:2287] {t}",
    "pylogging-default": "WARNING:sglang.srt.server_args:{t}",
}
LAUNCH = ("python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3 --speculative-draft-model-path d "
          "--speculative-eagle-topk 1 --speculative-num-steps 1 --speculative-num-draft-tokens 16")


def _diagnose(lines: list[str], launch=None) -> set[str]:
    engine = RuleEngine(RULES, launch=launch, version="0.5.10")
    pipe = Pipeline(engine=engine)
    pipe.feed_lines(lines)
    pipe.finish()
    return {d.rule for d in engine.diagnoses}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_value_changed_warnings_fire_in_every_style(style: str) -> None:
    fmt = STYLES[style]
    lines = [fmt.format(t=MR48), fmt.format(t=ADJUST)]
    got = _diagnose(lines)
    assert {"SPEC009", "SPEC018"} <= got, got
    with_launch = _diagnose(lines, parse_launch(LAUNCH))
    assert "SPEC003" in with_launch, with_launch
