"""Header line: host, server pid, SGLang version, phase, health (and why not), connection state with age of
last line, launch time."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.ui.model import HeaderInfo

PHASE_STYLES = {
    "serving": "bold black on green",
    "ready": "bold black on green",
    "loading": "bold black on yellow",
    "capturing": "bold black on yellow",
    "starting": "bold black on yellow",
    "crashed": "bold white on red",
    "stopped": "bold white on red",
}
HEALTH_STYLES = {"healthy": "green", "unhealthy": "bold white on red", "gone": "bold white on red"}
CONN_STYLES = {"connected": "green", "reconnecting": "yellow", "lost": "bold red", "replay": "cyan"}


def age_step(seconds: float) -> float:
    """The age the header shows, rounded down to its display step: 5 s in the first minute, then
    minutes, so a quiet log repaints the header every 5 s and then once a minute, not every second."""
    if seconds < 60:
        return float(int(seconds) // 5 * 5)
    return float(int(seconds) // 60 * 60)


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "no lines yet"
    if seconds < 5:
        return "just now"
    if seconds < 60:
        return f"{int(seconds) // 5 * 5}s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m ago"


class HeaderBar(Widget):
    """One line across the top. Set `info`; it re-renders."""

    DEFAULT_CSS = """
    HeaderBar { height: 1; background: $panel; }
    HeaderBar.-two-lines { height: 2; }
    """
    WIDE = 140  # below this the header takes two lines so nothing is cut off

    info: reactive[HeaderInfo] = reactive(HeaderInfo, layout=False)

    def on_resize(self) -> None:
        self.set_class(self.size.width < self.WIDE, "-two-lines")

    def render(self) -> Text:
        i = self.info
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        t.append(" spectui ", "bold reverse")
        t.append(f" {i.host}", "bold")
        if i.pid is not None:
            t.append(f" pid {i.pid}")
        t.append(" │ ", "dim")
        t.append(f"SGLang {i.version or '?'}")
        t.append(" │ ", "dim")
        if i.health == "gone":  # the log's last phase is history now, not what runs
            t.append(f" was {i.phase.upper()} ", "dim strike")
        else:
            t.append(f" {i.phase.upper()} ", PHASE_STYLES.get(i.phase, "reverse"))
        if i.health in ("unhealthy", "gone"):
            # Stuck, not quiet: said next to the phase, with why, so a glance cannot miss it.
            t.append(" ")
            t.append(" NOT HEALTHY " if i.health == "unhealthy" else " GONE ", HEALTH_STYLES[i.health])
            t.append(f" {i.health_reason}", "bold red")
        elif i.health == "healthy":
            t.append(" ♥ healthy", HEALTH_STYLES["healthy"])
        t.append("\n " if self.size.width and self.size.width < self.WIDE else " │ ", "dim")
        t.append("● ", CONN_STYLES.get(i.connection, "yellow"))
        t.append(i.connection, CONN_STYLES.get(i.connection, "yellow"))
        if i.connection != "replay":
            age_style = "bold yellow" if (i.last_line_age or 0) > 60 else "dim"
            t.append(f" · last line {format_age(i.last_line_age)}", age_style)
        if i.launched:
            t.append(" │ ", "dim")
            t.append(f"launched {i.launched}")
        if i.paused:
            t.append(" │ ", "dim")
            t.append(" PAUSED ", "bold black on yellow")
        if i.read_only:
            t.append(" │ ", "dim")
            t.append("read-only", "bold cyan")
        return t
