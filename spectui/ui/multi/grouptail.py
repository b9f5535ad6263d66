"""One tail for a server spread over several processes (multi-node TP/PP, PD disaggregation).

Every member's log is tailed; the member that prints SGLang's `Decode batch` lines (the primary: node
rank 0, the decode side of PD; if that one prints none for LEAD_GRACE_S, the first member that does) is
passed through whole, and from
every other member only its errors (a traceback as one block, a one-line fatal error), each after a line
naming the node. Lines are renumbered into one stream.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any

from spectui.aio import cancel_and_wait
from spectui.sources.base import TailEvent, TailLines, TailState

LEAD_GRACE_S = 20.0  # the member the flags name prints no decode line this long: follow one that does
QUIET_S = 1.0  # a member's log quiet this long: a traceback still waiting for its end is emitted
KEEP_LINES = 4000  # lines of a secondary kept to cut an error out of (a traceback is shorter)


class ErrorLines:
    """The lines of a secondary member's errors, through core's parser (tracebacks stay whole)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._parser: Any = None
        self._recent: deque[tuple[int, str]] = deque(maxlen=KEEP_LINES)

    def feed(self, event: TailLines) -> list[str]:
        from spectui.core.log import LogParser

        if self._parser is None:
            self._parser = LogParser(first_line=event.first_line)
        self._recent.extend(zip(range(event.first_line, event.first_line + len(event.lines)), event.lines,
                                strict=True))
        return self._cut(self._parser.feed(event.lines))

    def flush(self) -> list[str]:
        return self._cut(self._parser.flush()) if self._parser is not None else []

    def _cut(self, records: Sequence[Any]) -> list[str]:
        from spectui.core.log import ErrorEvent

        out: list[str] = []
        for r in records:
            if not isinstance(r, ErrorEvent):
                continue
            last = r.end_line or r.line
            out.append(f"──── error on {self.label} (line {r.line}) ────")
            out.extend(text for n, text in self._recent if r.line <= n <= last)
        return out


def group_tail(members: Sequence[Any], labels: Sequence[str], primary: int):  # noqa: ANN201 - a TailFactory
    """A Session.tail_factory over the member Sessions' own tails (the path argument is ignored)."""

    async def events(_path: str) -> AsyncIterator[TailEvent]:
        # bounded: a follower that stops reading (its parse fell behind) stops the members' tails too
        queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue(maxsize=64)

        async def pump(i: int, session: Any) -> None:
            try:
                async for ev in session.open_tail(session.log_path):
                    await queue.put((i, ev))
            except Exception as exc:  # noqa: BLE001 - one node's tail failing is shown, the others go on
                await queue.put((i, exc))
            await queue.put((i, None))

        tasks = [asyncio.create_task(pump(i, s)) for i, s in enumerate(members)]
        filters = {i: ErrorLines(labels[i]) for i in range(len(members))}
        lead, decoded, n, done = primary, False, 1, 0
        started = asyncio.get_running_loop().time()
        try:
            while done < len(members):
                try:
                    i, ev = await asyncio.wait_for(queue.get(), QUIET_S)
                except TimeoutError:
                    out = [line for j, f in filters.items() if j != lead for line in f.flush()]
                    if out:
                        yield TailLines(tuple(out), n, 0)
                        n += len(out)
                    continue
                if ev is None:
                    done += 1
                    continue
                if isinstance(ev, Exception):
                    if i == lead:
                        raise ev
                    first = str(ev).splitlines()[0] if str(ev) else type(ev).__name__
                    out = [f"──── stopped following {labels[i]}: {first} ────"]
                elif isinstance(ev, TailState):
                    if i == lead:
                        yield ev
                    continue
                elif not isinstance(ev, TailLines) or not ev.lines:
                    continue
                else:
                    late = asyncio.get_running_loop().time() - started > LEAD_GRACE_S
                    if i != lead and not decoded and late and any("Decode batch" in ln for ln in ev.lines):
                        lead = i  # this member prints the decode lines: follow it whole from here
                    if i == lead:
                        decoded = decoded or any("Decode batch" in ln for ln in ev.lines)
                        out = list(ev.lines)
                    else:
                        out = filters[i].feed(ev)
                if out:
                    yield TailLines(tuple(out), n, 0)
                    n += len(out)
        finally:
            await cancel_and_wait(tasks)

    return events
