"""The config panel's requested/effective view from the running server's command line (ui.controller.Cockpit),
when SGLang's argparse accepts it and when it does not."""

from __future__ import annotations

from rich.console import Console

from spectui.core.launch import parse_command
from spectui.ui.controller import Cockpit
from spectui.ui.widgets.config_panel import ConfigPanel

SEED = ("python3 -m {prog} --model-path /m --speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 16 --speculative-num-steps 1")


def rows(cockpit: Cockpit) -> dict[str, tuple[object, object, bool]]:
    return {r.key: (r.requested, r.effective, r.differs) for r in cockpit.config_view().rows}


def test_a_simulator_started_with_its_own_flags_is_judged_like_sglang() -> None:
    """README's `python -m spectui.sim … --sim-traffic 2`: the knobs are not SGLang's flags, so the seed's
    override (16 draft tokens -> 2) is predicted as for a real server."""
    launch = parse_command(SEED.format(prog="spectui.sim") + " --sim-traffic 2 --sim-fault crash-after 3")
    view = rows(Cockpit(launch=launch, version="0.5.23"))
    assert view["speculative_num_draft_tokens"] == (16, 2, True)
    assert Cockpit(launch=launch, version="0.5.23").config_view().problem == ""


def test_a_command_argparse_rejects_still_shows_what_was_requested_and_why() -> None:
    """A server running flags this release's catalogue lacks (a patched build): requested values as typed,
    and the caption says why there is no prediction; the quoted flag is text, not markup."""
    launch = parse_command(SEED.format(prog="sglang.launch_server") + " --my-patch=[red]x[/red]")
    cockpit = Cockpit(launch=launch, version="0.5.23")
    view = cockpit.config_view()
    assert rows(cockpit)["speculative_num_draft_tokens"] == (16, None, False)
    assert rows(cockpit)["speculative_algorithm"][0] == "EAGLE3"
    assert "SGLang 0.5.23's flags reject the command" in view.problem
    assert "unrecognized arguments: --my-patch=[red]x[/red]" in view.problem
    panel = ConfigPanel()
    panel.view = view
    console = Console(width=200, record=True, color_system=None)
    console.print(panel.render())
    assert "--my-patch=[red]x[/red]" in console.export_text()  # printed literally


def test_an_accepted_command_has_no_problem_line() -> None:
    cockpit = Cockpit(launch=parse_command(SEED.format(prog="sglang.launch_server")), version="0.5.23")
    assert cockpit.config_view().problem == "" and rows(cockpit)["speculative_num_draft_tokens"] == (16, 2, True)
