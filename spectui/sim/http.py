"""A minimal HTTP/1.1 server on asyncio streams: one request per connection, JSON and SSE responses.

The stdlib has no asyncio HTTP server and the engine lives on the event loop, so this small layer
avoids a web framework (and a thread hop per token). Every response closes its connection, which
makes a streamed (SSE) body close-delimited, as HTTP/1.1 allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

PHRASES = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           503: "Service Unavailable"}
MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    client: str  # "127.0.0.1:51234"

    def json(self) -> dict:
        if not self.body:
            return {}
        data = json.loads(self.body)
        if not isinstance(data, dict):
            raise ValueError("request body must be a JSON object")
        return data


@dataclass(frozen=True, slots=True)
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    stream: AsyncIterator[bytes] | None = None  # SSE events, already framed

    @classmethod
    def json(cls, data: object, status: int = 200) -> Response:
        return cls(status, json.dumps(data).encode())

    @classmethod
    def text(cls, text: str, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Response:
        return cls(status, text.encode(), content_type)

    @classmethod
    def sse(cls, events: AsyncIterator[bytes]) -> Response:
        return cls(200, b"", "text/event-stream", events)


Handler = Callable[[Request], Awaitable[Response]]


def sse_event(data: object) -> bytes:
    return b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler,
                           on_response: Callable[[Request, int], None]) -> None:
    """Read one request, answer it, close. `on_response` is called when the status line is sent."""
    try:
        req = await _read_request(reader, writer)
        if req is None:
            return
        try:
            resp = await handler(req)
        except (ValueError, KeyError, TypeError) as exc:
            resp = Response.json({"error": {"message": f"invalid request: {exc}"}}, 400)
        head = [f"HTTP/1.1 {resp.status} {PHRASES.get(resp.status, 'OK')}", f"content-type: {resp.content_type}",
                "connection: close"]
        if resp.stream is None:
            head.append(f"content-length: {len(resp.body)}")
        else:
            head.append("cache-control: no-cache")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        on_response(req, resp.status)
        if resp.stream is None:
            writer.write(resp.body)
        else:
            async for chunk in resp.stream:
                writer.write(chunk)
                await writer.drain()
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass  # the client went away; nothing to answer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
    line = await reader.readline()
    if not line.strip():
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        return None
    method, target, _ = parts
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        key, _, value = raw.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    if length > MAX_BODY:
        return None
    if headers.get("expect", "").lower() == "100-continue" and length:
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits for this before a large body
    body = await reader.readexactly(length) if length else b""
    peer = writer.get_extra_info("peername") or ("127.0.0.1", 0)
    url = urlsplit(target)
    return Request(method.upper(), url.path, parse_qs(url.query), headers, body, f"{peer[0]}:{peer[1]}")
