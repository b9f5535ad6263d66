"""The load client against a hostile server on 127.0.0.1: an endless event line and a huge error body are cut
(one failed request with the reason), never read into memory whole."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from spectui.load.client import MAX_SSE_LINE, stream_request
from spectui.load.record import RequestRecord


async def _serve(handler) -> tuple[web.AppRunner, str]:  # type: ignore[no-untyped-def]
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1/chat/completions"


async def test_an_endless_event_line_fails_the_request_not_the_memory() -> None:
    async def endless(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        block = b"x" * (1 << 20)
        try:
            for _ in range(64):  # 64 MiB at most, never a newline
                await resp.write(block)
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    runner, url = await _serve(endless)
    try:
        async with aiohttp.ClientSession() as http:
            rec = await stream_request(http, url, {"stream": True}, RequestRecord(index=0, prompt_id="p0", endpoint="chat", warmup=False))
        assert rec.error == "ProtocolError" and f"{MAX_SSE_LINE >> 20} MiB" in (rec.error_detail or "")
    finally:
        await runner.cleanup()


async def test_a_huge_error_body_is_cut() -> None:
    async def huge(request: web.Request) -> web.Response:
        return web.Response(status=500, body=b"boom " * (4 << 20))

    runner, url = await _serve(huge)
    try:
        async with aiohttp.ClientSession() as http:
            rec = await asyncio.wait_for(stream_request(http, url, {}, RequestRecord(index=0, prompt_id="p0", endpoint="chat", warmup=False)), 60)
        assert rec.error == "HTTP 500" and rec.error_detail is not None and len(rec.error_detail) < 10_000
    finally:
        await runner.cleanup()
