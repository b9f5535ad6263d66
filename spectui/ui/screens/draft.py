"""Draft checkpoint (`i`): the inspection of the followed server's draft, read where the server runs.

The inspection runs in a worker (an async one: SSH reads are awaited, local reads go to a thread), so
the log keeps flowing while it reads. Its findings are also given to the cockpit's rule engine, so the
DRAFT rules can join them with the accept length the log shows.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from spectui.core.text import terminal_safe_short

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


async def inspect_session(session: Any) -> Any:
    """The ServerInspection of the session's server (its host, argv, environment), or of its known launch
    (on this machine for a replayed log). Raises SpectuiError / ValueError with a one-line reason."""
    from spectui.errors import UsageError
    from spectui.sources.ckptreader import inspect_launch, inspect_server

    server, host = session.server, session.host
    if server is not None and host is not None:
        return await inspect_server(host, server, version=session.sglang_version)
    if session.launch is None:
        raise UsageError("the launch command of this server is not known: no draft path to inspect "
                         "(run `spectui inspect --draft PATH --model PATH`)")
    if host is None:
        from spectui.sources.local import LocalHost

        host = LocalHost(read_only=True)
    return await inspect_launch(host, session.launch, version=session.sglang_version)


def findings_text(inspection: Any) -> Text:
    out = Text()
    findings = inspection.findings
    if not findings:
        out.append("no findings: the draft looks loadable and consistent with the target\n", "green")
    for f in findings:
        out.append(f"{f.severity.upper():<8}", _STYLE.get(f.severity, ""))
        out.append(f"{f.category}  ", "dim")
        out.append(terminal_safe_short(f.title, 400) + "\n")
        for ev in f.evidence[:6]:
            out.append(f"          · {terminal_safe_short(ev, 300)}\n", "dim")
        if f.fix and f.fix != "none":
            out.append(f"          fix: {terminal_safe_short(f.fix, 300)}\n", "green")
    return out


class DraftScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,i", "dismiss", "Close"), Binding("R", "reload", "Read again")]

    def __init__(self, session: Any, cockpit: Any = None) -> None:
        super().__init__()
        self.session = session
        self.cockpit = cockpit
        self.result: Any = None  # the ServerInspection once read
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="draft-dialog"):
            yield Static("draft checkpoint", classes="title")
            with VerticalScroll():
                yield Static(Text("reading config.json and safetensors headers …", style="dim"), id="draft-summary")
                yield Static("", id="draft-findings")
            yield Static(Text("esc close   R read again", style="dim"))

    def on_mount(self) -> None:
        self.load()

    def action_reload(self) -> None:
        self.query_one("#draft-summary", Static).update(Text("reading …", style="dim"))
        self.load()

    @work(exclusive=True, group="draft-inspect")
    async def load(self) -> None:
        from spectui.errors import SpectuiError

        try:
            done = await inspect_session(self.session)
        except (SpectuiError, ValueError, OSError) as exc:
            self.error = str(exc)
            self.query_one("#draft-summary", Static).update(Text(f"cannot inspect: {exc}", style="bold red"))
            return
        self.result = done
        self._show(done)
        engine = getattr(getattr(self.cockpit, "pipeline", None), "engine", None)
        if engine is not None and hasattr(engine, "set_draft"):
            engine.set_draft(done.inspection.findings)  # the DRAFT rules join them with the log's accept len

    def _show(self, done: Any) -> None:
        from spectui.sources.ckptreader import summary_lines

        summary = Text()
        for label, text in summary_lines(done):
            summary.append(f"{label:<7}", "bold")
            summary.append(terminal_safe_short(text, 400) + "\n")
        self.query_one("#draft-summary", Static).update(summary)
        self.query_one("#draft-findings", Static).update(findings_text(done.inspection))
