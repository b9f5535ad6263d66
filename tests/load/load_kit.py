"""Helpers for the load generator tests (imported as `from load_kit import …`; fixtures stay in
conftest.py): the real simulator as a subprocess, and a tiny scripted OpenAI-like server on asyncio
streams (for failures and fields the simulator does not produce)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

SPEC_ARGS = ["--model-path", "m", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
             "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
             "--speculative-num-draft-tokens", "4", "--sim-time-scale", "50"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout_s: float = 20.0, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = log.read_text(errors="replace") if log else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err[-2000:]}")
        try:
            if httpx.get(url, timeout=1.0, trust_env=False).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} not ready after {timeout_s} s")


@contextlib.contextmanager
def run_sim(*extra: str) -> Iterator[str]:
    """`python -m spectui.sim` with speculation on, ready (/health 200); yields its base URL. Its log goes
    to a file: an undrained pipe would fill up and stall the server mid-run."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "sim.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "spectui.sim", *SPEC_ARGS, "--port", str(port), *extra],
                                    stdout=subprocess.DEVNULL, stderr=sink)
        try:
            wait_http(f"http://127.0.0.1:{port}/health", proc, log=log)
            yield f"http://127.0.0.1:{port}"
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# -- a scripted fake server ----------------------------------------------------------------------------

@dataclass
class Reply:
    """What the fake server answers: a status and a JSON body, or (status 200) SSE events."""

    status: int = 200
    body: object = None
    events: list[object] = field(default_factory=list)  # dicts (sent as JSON), raw bytes, or a float delay
    close_early: bool = False  # stop after the events, without `data: [DONE]`


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict


Handler = Callable[[Seen], Reply | Awaitable[Reply]]


def models_reply(model: str = "fake-model") -> Reply:
    return Reply(body={"object": "list", "data": [{"id": model, "object": "model", "owned_by": "sglang"}]})


def chat_events(tokens: list[str], *, usage: int | None = None, extra: list[object] | None = None) -> list[object]:
    events: list[object] = []
    for i, tok in enumerate(tokens):
        delta = {"content": tok, **({"role": "assistant"} if i == 0 else {})}
        events.append({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                        "finish_reason": None}]})
    events.append({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {},
                                                                    "finish_reason": "length"}]})
    events.extend(extra or [])
    if usage is not None:
        events.append({"object": "chat.completion.chunk", "choices": [],
                       "usage": {"prompt_tokens": 5, "completion_tokens": usage, "total_tokens": 5 + usage}})
    return events


@contextlib.asynccontextmanager
async def fake_server(handler: Handler) -> AsyncIterator[tuple[str, list[Seen]]]:
    """An HTTP/1.1 server on 127.0.0.1 (one request per connection); yields (base URL, requests seen)."""
    seen: list[Seen] = []

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            raw = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            req = Seen(method, path, headers, json.loads(raw) if raw else {})
            seen.append(req)
            reply = handler(req)
            if asyncio.iscoroutine(reply):
                reply = await reply
            assert isinstance(reply, Reply)
            if reply.events or reply.status == 200 and reply.body is None:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                for ev in reply.events:
                    if isinstance(ev, float):
                        await writer.drain()
                        await asyncio.sleep(ev)
                        continue
                    data = ev if isinstance(ev, bytes) else json.dumps(ev).encode()
                    writer.write(b"data: " + data + b"\n\n")
                if not reply.close_early:
                    writer.write(b"data: [DONE]\n\n")
            else:
                body = json.dumps(reply.body).encode()
                writer.write(f"HTTP/1.1 {reply.status} X\r\ncontent-type: application/json\r\n"
                             f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(conn, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.close()
        await server.wait_closed()
