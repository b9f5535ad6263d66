"""Diagnoses panel: severity, title, evidence, fix per diagnosis; enter explains, `f` opens the fix in relaunch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

SEVERITY_STYLES = {"error": "bold white on red", "warning": "bold black on yellow", "info": "bold black on cyan"}


def fix_text(fix: Any) -> str:
    """`--flag value` / `unset --flag` for a core.rules.Fix (duck-typed)."""
    if fix is None:
        return ""
    parts = [f"{flag} {value}".strip() for flag, value in dict(fix.set).items()]
    parts += [f"unset {flag}" for flag in fix.unset]
    return ", ".join(parts)


def diagnosis_prompt(d: Any) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(f" {d.severity.upper():7}", SEVERITY_STYLES.get(d.severity, "reverse"))
    t.append(f" {d.rule} ", "bold")
    t.append(d.title)
    if getattr(d, "count", 1) > 1:
        t.append(f" ×{d.count}", "dim")
    if d.evidence:
        t.append("\n   ")
        t.append(str(d.evidence[0]), "dim")
    fix = fix_text(d.fix)
    if fix:
        t.append("\n   fix: ", "bold green")
        t.append(fix, "green")
    return t


class DiagnosesPanel(OptionList):
    """A list of core.rules.Diagnosis, most severe first."""

    BINDINGS = [Binding("f", "fix", "Apply fix…", show=True)]
    DEFAULT_CSS = """
    DiagnosesPanel { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    class Selected(Message):
        def __init__(self, diagnosis: Any) -> None:
            super().__init__()
            self.diagnosis = diagnosis

    class FixRequested(Message):
        def __init__(self, diagnosis: Any) -> None:
            super().__init__()
            self.diagnosis = diagnosis

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diagnoses: list[Any] = []
        self._key: tuple | None = None

    def set_diagnoses(self, diagnoses: Sequence[Any]) -> None:
        # What the rows show: a diagnosis seen again on a later line (its last_line moves on every batch of
        # a busy log) rebuilds nothing; the objects are kept for explain / fix either way.
        key = tuple((d.rule, d.severity, d.title, getattr(d, "count", 1), str(d.evidence[0]) if d.evidence else "",
                     fix_text(d.fix)) for d in diagnoses)
        self.diagnoses = list(diagnoses)
        if key == self._key:
            return  # unchanged: keep the highlight where the user put it
        self._key = key
        highlighted = self.highlighted
        self.clear_options()
        if not diagnoses:
            self.add_option(Option(Text("no diagnoses — nothing the rules recognise so far", style="dim"),
                                   disabled=True))
            return
        self.add_options(Option(diagnosis_prompt(d), id=f"d{i}") for i, d in enumerate(diagnoses))
        self.highlighted = min(highlighted or 0, len(diagnoses) - 1)
        self.border_title = f"diagnoses ({len(diagnoses)})"

    @property
    def current(self) -> Any | None:
        if self.highlighted is None or not self.diagnoses or self.highlighted >= len(self.diagnoses):
            return None
        return self.diagnoses[self.highlighted]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.current is not None:
            self.post_message(self.Selected(self.current))

    def action_fix(self) -> None:
        if self.current is not None and self.current.fix is not None:
            self.post_message(self.FixRequested(self.current))
        else:
            self.notify("this diagnosis has no flag fix", severity="warning")
