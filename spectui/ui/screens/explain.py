"""A diagnosis in full: what fired, the evidence, why it matters (explanation), links, and its fix."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from spectui.ui.widgets.diagnoses import SEVERITY_STYLES, fix_text


def explanation_text(d: Any, *, read_only: bool) -> Text:
    t = Text()
    t.append(f" {d.severity.upper()} ", SEVERITY_STYLES.get(d.severity, "reverse"))
    t.append(f" {d.rule} · {d.category}\n", "bold")
    t.append(d.title + "\n\n", "bold")
    if d.evidence:
        t.append("evidence\n", "bold underline")
        for ev in d.evidence:
            t.append(f"  {ev}\n")  # log text: appended as plain text, never parsed as markup
        t.append("\n")
    if d.explanation:
        t.append("why\n", "bold underline")
        t.append(d.explanation.strip() + "\n\n")
    fix = fix_text(d.fix)
    if fix:
        t.append("fix  ", "bold underline")
        t.append(fix + "\n", "bold green")
        t.append("press f to open the relaunch screen with this fix" if not read_only
                 else "read-only session: relaunch is disabled", "dim")
        t.append("\n")
    for link in d.links:
        t.append(f"{link}\n", "cyan")
    return t


class ExplainScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("f", "fix", "Apply fix…"),
    ]

    def __init__(self, diagnosis: Any, *, read_only: bool = False) -> None:
        super().__init__()
        self.diagnosis = diagnosis
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            with VerticalScroll():
                yield Static(explanation_text(self.diagnosis, read_only=self.read_only), id="explanation")
            yield Static(Text("esc close · f apply fix", style="dim"))

    def action_fix(self) -> None:
        if self.diagnosis.fix is None:
            self.notify("this diagnosis has no flag fix", severity="warning")
            return
        self.dismiss()
        self.app.action_relaunch(self.diagnosis)  # type: ignore[attr-defined]
