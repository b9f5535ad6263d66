"""What the relaunch screen shows while a relaunch runs and after it ended: the live steps, and for a
failure the reason that ended it (the diagnosis: rule id, title, evidence line), every rollback step and
what runs now. Pure: ops' Progress / RelaunchResult in, rich Text out; every text scrubbed of the secret
values the screen knows (a log line quoted as evidence may carry one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from spectui.ui.relaunch_model import scrub

LIVE_LINES = 8  # the last steps shown while running (the box sits above the buttons)


def _line(text: Text, body: str, style: str = "", *, indent: str = "") -> None:
    text.append(indent + body.replace("\n", " ") + "\n", style)


def live_text(steps: Sequence[tuple[str, str]], secrets: list[str]) -> Text:
    """The last steps of a running relaunch, one line each."""
    t = Text(no_wrap=True, overflow="ellipsis")
    for step, detail in steps[-LIVE_LINES:]:
        t.append(f"• {step}", "bold")
        if detail:
            t.append(f"  {scrub(detail, secrets)}", "dim")
        t.append("\n")
    return t


def cause_of(result: Any) -> Any:
    """The diagnosis that ended the failed start: the runner's pick, else the first error one."""
    new = getattr(result, "failed_attempt", None) or getattr(result, "new", None)  # a group: the node that failed
    cause = getattr(new, "cause", None)
    if cause is None:
        cause = next((d for d in getattr(new, "diagnoses", ()) if d.severity == "error"), None)
    return cause


def failure_text(result: Any, secrets: list[str]) -> Text:
    """A relaunch that did not end healthy: why, the diagnosis, the rollback's steps, what runs now."""
    t = Text(no_wrap=True, overflow="ellipsis")
    new = getattr(result, "failed_attempt", None) or result.new  # a group: the node that failed
    _line(t, f"✗ relaunch failed: {scrub(new.error or result.message or 'the new server is not healthy', secrets)}",
          "bold red")
    cause = cause_of(result)
    if cause is not None:
        t.append("  cause     ", "bold")
        t.append(f"{cause.rule}", "bold red")
        _line(t, f"  {scrub(cause.title, secrets)}")
        evidence = next((e for e in getattr(cause, "evidence", ()) if e), None)
        if evidence:
            t.append("  evidence  ", "bold")
            _line(t, scrub(str(evidence).strip(), secrets), "dim")
    rollback = [p for p in getattr(result, "steps", ()) if p.rollback]
    if rollback:
        _line(t, "rollback", "bold underline")
        for p in rollback:
            t.append(f"  • {p.step.value.replace('_', ' ')}", "bold")
            _line(t, f"  {scrub(p.message, secrets)}", "dim")
    if result.rollback is not None and result.rollback.healthy:
        _line(t, f"rolled back to the previous command: pid {result.rollback.pid} serves again, "
                 f"now following {result.rollback.log}", "bold yellow")
    elif result.rollback is not None:
        _line(t, f"rollback failed: {scrub(result.rollback.error or '', secrets)}", "bold red")
        _line(t, f"no healthy server runs now — see {result.rollback.log or new.log or 'the logs'}", "red")
    else:
        _line(t, scrub(result.message, secrets), "red")
    for m in getattr(result, "members", ()):  # a group: what runs now on every node
        now = m.rollback if m.rollback is not None else m.new
        state = "healthy" if now.healthy else "not healthy"
        _line(t, f"{m.label}: pid {now.pid or '–'} {state}" + (f" ({now.log})" if now.log else ""), "dim")
    _line(t, "press Relaunch to plan again from what runs now", "dim")
    return t


def refused_text(exc: BaseException, secrets: list[str]) -> Text:
    """A relaunch refused or broken before it produced a result (pre-flight, another one running …)."""
    t = Text()  # wrapped (the screen lets #progress wrap for it): a refusal's reason and its way out are long
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    reason, _, way = scrub(message, secrets).partition(" — ")  # "…; nothing was changed — do it as the owner (…)"
    _line(t, f"✗ relaunch failed: {reason}", "bold red")
    if way:
        _line(t, f"→ {way}", "yellow")
    _line(t, "press Relaunch to plan again from what runs now", "dim")
    return t
