"""The server picker: `spectui connect HOST` on a host running several SGLang servers asks which one (pid,
port, model, algorithm, log), instead of exiting with a list. A small app of its own, run before the
cockpit: enter picks, escape or q gives up (the command then exits, nothing opened)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option


def _row(proc: Any) -> Text:
    from spectui.sources.target import server_line

    log = proc.log_path or "(log not a file)"
    return Text(f"{server_line(proc).strip()}  log {log}", no_wrap=True, overflow="ellipsis")


class ServerPicker(App[Any]):
    """Returns the ServerProcess picked (app.return_value), or None."""

    BINDINGS = [Binding("escape,q", "give_up", "Cancel"), Binding("enter", "pick", "Open", show=True)]
    DEFAULT_CSS = """
    ServerPicker #question { padding: 1 2 0 2; }
    ServerPicker OptionList { margin: 1 2; height: auto; max-height: 80%; }
    """

    def __init__(self, host_name: str, servers: Sequence[Any]) -> None:
        super().__init__()
        self.host_name = host_name
        self.servers = list(servers)

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{len(self.servers)} SGLang servers on {self.host_name}: which one? "
                          "(enter opens it, escape gives up)", style="bold"), id="question")
        yield OptionList(*(Option(_row(s), id=str(i)) for i, s in enumerate(self.servers)), id="servers")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.exit(self.servers[int(event.option.id or 0)])

    def action_pick(self) -> None:
        ol = self.query_one(OptionList)
        if ol.highlighted is not None:
            self.exit(self.servers[ol.highlighted])

    def action_give_up(self) -> None:
        self.exit(None)


async def pick_server_on_screen(host_name: str, servers: Sequence[Any]) -> Any:
    """Run the picker; the ServerProcess picked, or None."""
    app = ServerPicker(host_name, servers)
    await app.run_async()
    return app.return_value
