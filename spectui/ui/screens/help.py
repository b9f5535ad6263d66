"""Help (`?`, F1): every key, what the panels mean, where numbers come from."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# (keys, what they do, the app action behind them when a session can forbid it)
KEYS: tuple[tuple[str, str, str | None], ...] = (
    ("?  F1", "this help", None),
    (":  ctrl+p", "command palette (every action)", None),
    ("q", "quit (esc closes a dialog)", None),
    ("space", "pause / resume following the log", None),
    ("G  End  F", "jump to the end and follow", None),
    ("g  Home", "jump to the top", None),
    ("/", "search (regex; all lower case = ignore case); the title counts hits: 3/17", None),
    ("n  N", "next / previous search hit", None),
    ("\\", "filter: show only matching lines; !regex hides them; empty clears", None),
    ("e  E", "next / previous error (a traceback is one error)", None),
    ("p", "show / hide spectui's own probe lines (GET /health, /server_info, /metrics; hidden at start)", None),
    ("y", "copy the cursor line, or the lines on screen (OSC 52, works over SSH)", None),
    ("d  l  tab", "focus diagnoses / log / next panel", None),
    ("enter", "on a diagnosis: explanation, evidence, fix", None),
    ("f", "on a diagnosis: open the relaunch screen with its fix", "relaunch"),
    ("r", "relaunch screen: edit flags, live diff and verdict, confirm", "relaunch"),
    ("r", "relaunch screen as a preview: edit flags, see the diff and verdict (no relaunch here)",
     "relaunch_preview"),
    ("h", "launch history: flags and what each launch reached", None),
    ("b", "bench: load the server, measure tok/s and accept len (vs no speculation when known)", "bench"),
    ("w", "sweep: edit a grid of depths, see the plan, confirm; each config relaunched + benched, then back",
     "sweep"),
    ("w", "sweep plan: edit a grid of depths and see the plan (nothing is launched here)", "sweep_plan"),
    ("i", "draft checkpoint: config.json and safetensors headers checked against the target and launch", None),
    ("x", "record an incident bundle of this server (saved under the XDG state folder; path shown)", "record"),
    ("1 … 9", "several servers (connect T1 T2 …): show tab N", None),
    ("[  ]", "previous / next tab (also ctrl+pageup / ctrl+pagedown)", None),
    ("0", "fleet (connect --prometheus URL): every instance, worst first; enter opens it in a new tab", None),
)


def read_only_reason(session: object) -> str:
    """Why a session is read-only, in the words the operator would use."""
    if getattr(session, "replay", False):
        return "a replay of a recording: no live server"
    if getattr(session, "server", None) is None:
        return "a log file: no server to relaunch"
    return "started with --read-only"


def off_actions(session: object) -> dict[str, str]:
    """The app actions `session` cannot do (action -> why): the footer hides them and help leaves them out."""
    off: dict[str, str] = {}
    live = getattr(session, "host", None) is not None and not getattr(session, "replay", False)
    if not live:
        for action in ("bench", "sweep", "sweep_plan", "record"):
            off[action] = "no live server (a replay)"
    if getattr(session, "read_only", False):
        off["relaunch"] = read_only_reason(session)
        off.setdefault("sweep", off["relaunch"])  # a sweep relaunches the server: its plan is left
    else:
        off["relaunch_preview"] = off["sweep_plan"] = "the action itself is on"
    return off


NOTES = """\
accept len  tokens committed per verify round, bonus token included (SGLang's own number).
ceiling     steps + 1: the most accept len can be with these flags.
α           per-draft-token acceptance recomputed from accept len and num steps (chain formula);
            SGLang's printed "accept rate" changed meaning across releases, so it is shown dimmed.
gen tok/s   summed over DP ranks for the same interval.
config      requested = the launch command; effective = the server_args line in the log (what the
            server really uses) or, before it appears, the resolver's prediction. ≠ marks an override.
log text    shown as plain text: escape sequences and control characters are removed."""


def key_rows(off: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """The keys that work in a session whose forbidden actions are `off` (off_actions)."""
    off = off or {}
    return [(keys, what) for keys, what, action in KEYS if action is None or action not in off]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def __init__(self, off: dict[str, str] | None = None) -> None:
        super().__init__()
        self.off = off or {}

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for keys, what in key_rows(self.off):
            table.add_row(Text(keys), Text(what))
        with Vertical(classes="dialog"):
            yield Static("spectui keys", classes="title")
            with VerticalScroll():
                yield Static(table)
                names = {"relaunch": "r relaunch, f fix", "bench": "b bench", "sweep": "w sweep",
                         "record": "x record"}
                shown = {a: r for a, r in self.off.items() if a in names}
                if shown:
                    why = "; ".join(f"{names[a]}: {r}" for a, r in shown.items())
                    yield Static(Text(f"\noff in this session: {why}", style="yellow"))
                yield Static(Text("\n" + NOTES, style="dim"))
