"""The dashboard's log keys: follow/pause, search, filter, next/previous error, copy, jumps, focus.

A mixin of DashboardScreen (whose @on handlers call `_update_log_title` and `_prompt_submitted`: Textual
collects message handlers only from its own classes) (it uses the screen's LogView, its #prompt Input and its header refresh), kept
apart so the screen's module holds the data flow and this one what the keys do to the log pane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Input

from spectui.ui.widgets.log_view import LogView

if TYPE_CHECKING:
    from textual.screen import Screen as _Base
else:
    _Base = object


class LogKeys(_Base):
    """Log-pane actions; mixed into a Screen that has a LogView and an Input with id "prompt"."""

    log_path: str | None
    _prompt_mode: str

    if TYPE_CHECKING:
        def _refresh_header(self) -> None: ...  # the screen's

    # ---- log keys --------------------------------------------------------------------------------

    def _update_log_title(self) -> None:
        log = self.query_one(LogView)
        parts = ["log", self.log_path or ""]
        parts.append("following (space pauses)" if log.following else f"PAUSED (+{log.unseen} new; space resumes)")
        if log.filter_text:
            n = log.filter_count() or 0
            parts.append(f"filter: {log.filter_text} ({n} line{'s' if n != 1 else ''})" if n else
                         f"filter: {log.filter_text} (0 matches)")
        if log.search_text:
            at, hits = log.search_count()
            parts.append(f"search: {log.search_text} " + (f"{at}/{hits}" if at else
                                                          f"({hits} hit{'s' if hits != 1 else ''})"))
        if log.probes:
            parts.append(f"{log.probes} probe lines shown (p hides)" if log.show_probes else
                         f"{log.probes} probe lines hidden (p shows)")
        log.border_title = Content(" · ".join(p for p in parts if p))  # paths and patterns are data, not markup
        self._refresh_header()

    def action_toggle_probes(self) -> None:
        """Show or hide spectui's own GET /health, /server_info, /metrics lines (hidden at start)."""
        shown = self.query_one(LogView).toggle_probes()
        self._update_log_title()
        self.notify("probe lines shown" if shown else "probe lines hidden", timeout=2)

    def action_toggle_follow(self) -> None:
        self.query_one(LogView).toggle_follow()

    def action_prompt(self, mode: str) -> None:
        self._prompt_mode = mode
        prompt = self.query_one("#prompt", Input)
        log = self.query_one(LogView)
        if mode == "search":
            prompt.placeholder = "search (regex; lower case ignores case) — enter to find, n/N next/previous"
            prompt.value = log.search_text
        else:
            now = f" (now: {log.filter_text})" if log.filter_text else ""
            prompt.placeholder = f"filter{now}: lines matching this regex; !regex hides them; empty clears"
            prompt.value = ""
        prompt.border_title = mode
        prompt.add_class("-visible")
        prompt.focus()

    def action_close_prompt(self) -> None:
        prompt = self.query_one("#prompt", Input)
        if prompt.has_class("-visible"):
            prompt.remove_class("-visible")
            self.query_one(LogView).focus()

    def _prompt_submitted(self, event: Input.Submitted) -> None:
        log = self.query_one(LogView)
        self.action_close_prompt()
        if self._prompt_mode == "search":
            if not log.set_search(event.value) and event.value:
                self.notify(f"no line matches {event.value!r}", severity="warning", markup=False)
        else:
            log.set_filter(event.value)

    def action_find(self, backward: bool) -> None:
        log = self.query_one(LogView)
        if not log.search_text:
            self.action_prompt("search")
        elif not log.find(backward=backward):
            self.notify("no more matches " + ("above" if backward else "below"), severity="warning", timeout=2)

    def action_error(self, backward: bool) -> None:
        if not self.query_one(LogView).jump_error(backward=backward):
            self.notify("no more errors " + ("above" if backward else "below"), timeout=2)

    def action_copy(self) -> None:
        """Copy the cursor line (or the lines on screen) to the clipboard (OSC 52: works over SSH)."""
        text, n = self.query_one(LogView).copy_text()
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {n} line{'s' if n != 1 else ''} to the clipboard", timeout=2)

    def action_top(self) -> None:
        self.query_one(LogView).go_top()

    def action_bottom(self) -> None:
        self.query_one(LogView).go_bottom()

    def action_focus(self, widget_id: str) -> None:
        self.query_one(f"#{widget_id}").focus()

