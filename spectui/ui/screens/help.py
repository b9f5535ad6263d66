"""Help (`?`, F1): every key, what the panels mean, where numbers come from."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("?  F1", "this help"),
    (":  ctrl+p", "command palette (every action)"),
    ("q", "quit (esc closes a dialog)"),
    ("space", "pause / resume following the log"),
    ("G  End  F", "jump to the end and follow"),
    ("g  Home", "jump to the top"),
    ("/", "search (regex; all lower case = ignore case)"),
    ("n  N", "next / previous search hit"),
    ("\\", "filter: show only matching lines; !regex hides them; empty clears"),
    ("e  E", "next / previous error (a traceback is one error)"),
    ("y", "copy the cursor line, or the lines on screen (OSC 52, works over SSH)"),
    ("d  l  tab", "focus diagnoses / log / next panel"),
    ("enter", "on a diagnosis: explanation, evidence, fix"),
    ("f", "on a diagnosis: open the relaunch screen with its fix"),
    ("r", "relaunch screen: edit flags, live diff and verdict, confirm"),
    ("h", "launch history: flags and what each launch reached"),
    ("i", "draft checkpoint: config.json and safetensors headers checked against the target and launch"),
    ("w", "sweep: edit a grid of depths, see the plan, confirm; each config relaunched + benched, then back"),
    ("x", "record an incident bundle of this server (saved under the XDG state folder; path shown)"),
    ("1 … 9", "several servers (connect T1 T2 …): show tab N"),
    ("[  ]", "previous / next tab (also ctrl+pageup / ctrl+pagedown)"),
    ("0", "fleet (connect --prometheus URL): every instance, worst first; enter opens it in a new tab"),
)

NOTES = """\
accept len  tokens committed per verify round, bonus token included (SGLang's own number).
ceiling     steps + 1: the most accept len can be with these flags.
α           per-draft-token acceptance recomputed from accept len and num steps (chain formula);
            SGLang's printed "accept rate" changed meaning across releases, so it is shown dimmed.
gen tok/s   summed over DP ranks for the same interval.
config      requested = the launch command; effective = the server_args line in the log (what the
            server really uses) or, before it appears, the resolver's prediction. ≠ marks an override.
log text    shown as plain text: escape sequences and control characters are removed."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for keys, what in KEYS:
            table.add_row(Text(keys), Text(what))
        with Vertical(classes="dialog"):
            yield Static("spectui keys", classes="title")
            with VerticalScroll():
                yield Static(table)
                yield Static(Text("\n" + NOTES, style="dim"))
