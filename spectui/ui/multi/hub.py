"""One set of tails shared by every browser viewer of `spectui serve`.

textual-serve starts one app process per visit. The serve process holds the connections, discovery and
one tail per tab here (a HubServer on a Unix socket in a private folder); each viewer's app asks it for
the tabs (`fetch_tabs`) and follows them through `hub_tail`, so ten viewers cost one SSH tail each, not
ten. A new viewer is sent the lines held so far (up to `keep` per tab), then lines as they arrive.

Protocol: one JSON request line `{"token": T, "op": "tabs"}` or `{"token": T, "op": "tail", "tab": i}`,
then JSON lines back: the tab list, or `{"t": "state", ...}` / `{"t": "lines", ...}` events. A wrong
token gets nothing (the connection is closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any

from spectui.aio import cancel_and_wait
from spectui.sources.base import ConnState, TailEvent, TailLines, TailState

QUEUE_EVENTS = 2000  # a viewer this far behind is dropped (its tail ends; the others go on)


class _TabFeed:
    def __init__(self, spec: Any, keep: int) -> None:
        self.spec = spec
        self.keep = keep
        self.held: deque[tuple[int, tuple[str, ...], bool]] = deque()
        self.header: tuple[int, tuple[str, ...]] | None = None  # the launch's server_args line (LogTail header)
        self.held_lines = 0
        self.state: dict[str, Any] | None = None
        self.subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()

    def publish(self, event: dict[str, Any]) -> None:
        for q in list(self.subscribers):
            try:
                q.put_nowait(event)
            except asyncio.QueueFull:
                self.subscribers.discard(q)
                with contextlib.suppress(asyncio.QueueFull):
                    q.put_nowait(None)

    async def run(self) -> None:
        s = self.spec.session
        try:
            async for ev in s.open_tail(s.log_path):
                if isinstance(ev, TailState):
                    state = getattr(ev.state, "value", ev.state)
                    self.state = {"t": "state", "state": str(state), "detail": str(getattr(ev, "detail", ""))}
                    self.publish(self.state)
                elif isinstance(ev, TailLines) and ev.lines and ev.header:
                    self.header = (ev.first_line, tuple(ev.lines))  # kept apart: every viewer gets it first
                    self.publish({"t": "lines", "first": ev.first_line, "lines": list(ev.lines), "header": True})
                elif isinstance(ev, TailLines) and ev.lines:
                    self.held.append((ev.first_line, tuple(ev.lines), ev.backfill))
                    self.held_lines += len(ev.lines)
                    while self.held_lines > self.keep and len(self.held) > 1:
                        self.held_lines -= len(self.held.popleft()[1])
                    self.publish({"t": "lines", "first": ev.first_line, "lines": list(ev.lines),
                                  "backfill": ev.backfill})
        except Exception as exc:  # noqa: BLE001 - said to every viewer
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.state = {"t": "state", "state": "lost", "detail": first}
            self.publish(self.state)


def tab_info(spec: Any) -> dict[str, Any]:
    s = spec.session
    launch = s.launch.render() if s.launch is not None else None
    return {"label": spec.label, "log_path": s.log_path, "pid": s.pid, "launch": launch,
            "version": s.sglang_version, "server_port": s.server_port, "refusal": spec.refusal,
            "baseline_tps": spec.baseline_tps, "group": bool(spec.members)}


class HubServer:
    def __init__(self, specs: Sequence[Any], path: str, token: str, *, keep: int = 50_000) -> None:
        self.feeds = [_TabFeed(spec, keep) for spec in specs]
        self.path = path
        self.token = token
        self._server: asyncio.AbstractServer | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        import os

        self._tasks = [asyncio.create_task(f.run()) for f in self.feeds]
        self._server = await asyncio.start_unix_server(self._client, path=self.path)
        os.chmod(self.path, 0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        await cancel_and_wait(self._tasks)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            req = json.loads(await asyncio.wait_for(reader.readline(), 10))
            if not hmac.compare_digest(str(req.get("token", "")), self.token):
                return
            if req.get("op") == "tabs":
                writer.write((json.dumps([tab_info(f.spec) for f in self.feeds]) + "\n").encode())
                await writer.drain()
            elif req.get("op") == "tail":
                await self._stream(self.feeds[int(req["tab"])], writer)
        except (OSError, ValueError, KeyError, IndexError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _stream(self, feed: _TabFeed, writer: asyncio.StreamWriter) -> None:
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUE_EVENTS)
        backlog = [{"t": "lines", "first": f, "lines": list(lines), "backfill": True} for f, lines, _ in feed.held]
        if feed.header is not None:  # the launch's server_args line from before the backfill
            backlog.insert(0, {"t": "lines", "first": feed.header[0], "lines": list(feed.header[1]), "header": True})
        if feed.state is not None:
            backlog.insert(0, feed.state)
        feed.subscribers.add(q)
        try:
            for event in backlog:
                writer.write((json.dumps(event) + "\n").encode())
            await writer.drain()
            while (event := await q.get()) is not None:
                writer.write((json.dumps(event) + "\n").encode())
                await writer.drain()
        finally:
            feed.subscribers.discard(q)


async def fetch_tabs(path: str, token: str) -> list[dict[str, Any]]:
    reader, writer = await asyncio.open_unix_connection(path, limit=1 << 24)
    try:
        writer.write((json.dumps({"token": token, "op": "tabs"}) + "\n").encode())
        await writer.drain()
        return list(json.loads(await reader.readline()))
    finally:
        writer.close()


def hub_tail(path: str, token: str, tab: int):  # noqa: ANN201 - a Session.tail_factory
    async def events(_path: str) -> AsyncIterator[TailEvent]:
        reader, writer = await asyncio.open_unix_connection(path, limit=1 << 24)
        try:
            writer.write((json.dumps({"token": token, "op": "tail", "tab": tab}) + "\n").encode())
            await writer.drain()
            while line := await reader.readline():
                ev = json.loads(line)
                if ev["t"] == "state":
                    try:
                        state: Any = ConnState(ev["state"])
                    except ValueError:
                        state = ConnState.LOST
                    yield TailState(state, ev.get("detail", ""))
                else:
                    yield TailLines(tuple(ev["lines"]), int(ev["first"]), 0, bool(ev.get("backfill")),
                                    bool(ev.get("header")))
            yield TailState(ConnState.LOST, "spectui serve stopped")
        finally:
            writer.close()

    return events
