"""The history screen's recorded relaunches: the changes column shows flag AND environment edits
(LaunchRecord.changes_summary), so a relaunch that only changed the environment is not shown as "–"."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_kit import replay_app, settle

from spectui.ops.history import HistoryStore, LaunchRecord


async def test_env_only_relaunch_shows_its_change(seed_lines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spectui.ui.screens.history import HistoryScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = HistoryStore()
    store.append(LaunchRecord(id="a1", time="2026-01-01T00:00:01+00:00", host="replay", command="sglang serve",
                              env_diff=[{"name": "SGLANG_X", "old": None, "new": "1"}], outcome="healthy"))
    store.append(LaunchRecord(id="a2", time="2026-01-01T00:00:02+00:00", host="replay", command="sglang serve",
                              diff=[{"flag": "--speculative-num-steps", "old": "1", "new": "3"}],
                              env_diff=[{"name": "HF_TOKEN", "old": "***", "new": None}], outcome="healthy"))
    store.append(LaunchRecord(id="a3", time="2026-01-01T00:00:03+00:00", host="replay", command="sglang serve",
                              outcome="healthy"))
    app = replay_app(seed_lines)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        table = app.screen.query_one("#recorded")
        for _ in range(100):
            await pilot.pause(0.02)
            if table.row_count == 3:
                break
        col = [str(c.label) for c in table.columns.values()].index("changes")
        cells = [str(table.get_row_at(i)[col]) for i in range(table.row_count)]
        assert cells == ["env SGLANG_X ∅→1", "--speculative-num-steps 1→3, env HF_TOKEN ***→∅", "–"]
