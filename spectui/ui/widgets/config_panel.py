"""Config panel: requested vs effective speculative settings; a setting the server changed is shown in red."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.ui.model import SHORT_NAMES, ConfigView


def _show(value: object, width: int = 14) -> str:
    if value is None:
        return "–"
    text = str(value)
    if "/" in text and len(text) > width:  # a path: its end is what identifies it
        return "…" + text[-(width - 1):]
    return text if len(text) <= width else text[: width - 1] + "…"


class ConfigPanel(Widget):
    """Renders `view` as a three-column table (setting, requested, effective)."""

    DEFAULT_CSS = """
    ConfigPanel { height: auto; }
    """

    view: reactive[ConfigView] = reactive(ConfigView, layout=True)

    def watch_view(self, view: ConfigView) -> None:
        # where "effective" comes from: the server's own server_args line, or the resolver's prediction
        source = {"log": "log", "predicted": "predicted"}.get(view.effective_source)
        self.border_title = "config: requested vs effective" + (f" · {source}" if source else "")

    def render(self) -> Table | Text:
        v = self.view
        if not v.rows:
            return Text("no launch command or server_args seen yet", style="dim")
        table = Table(box=None, padding=(0, 1), expand=True, show_edge=False)
        table.add_column("setting", style="bold", no_wrap=True)
        table.add_column("requested", no_wrap=True)
        table.add_column("effective", no_wrap=True)
        overridden = 0
        cell = max(14, min(40, (self.size.width - 20) // 2))  # value width: paths show more when there is room
        for row in v.rows:
            name = SHORT_NAMES.get(row.key, row.key.removeprefix("speculative_").replace("_", " "))
            req = Text(_show(row.requested, cell), style="" if row.requested is not None else "dim")
            eff = Text(_show(row.effective, cell), style="" if row.effective is not None else "dim")
            if row.differs:
                overridden += 1
                name_t = Text(f"{name} ≠", style="bold red")
                eff = Text(f"{_show(row.effective, cell)} ⚠ overridden", style="bold white on red")
                req.stylize("bold")
            else:
                name_t = Text(name)
            table.add_row(name_t, req, eff)
        if not v.requested_known:
            table.caption = "launch command unknown: requested values not shown"
            table.caption_style = "dim"
        if v.problem:
            table.caption = Text(v.problem, style="yellow")  # it quotes the command: text, never markup
        if overridden:
            table.caption = f"{overridden} setting(s) changed by SGLang — see diagnoses"
            table.caption_style = "bold red"
        return table
