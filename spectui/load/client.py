"""One streamed request against an OpenAI-compatible server, timed the way SGLang's bench_serving does it.

Timing (sglang/benchmark/serving.py, async_request_openai_chat_completions / _completions; vLLM's
benchmarks/lib/endpoint_request_func.py is the same apart from the notes below):
  start        perf_counter() just before the POST is sent
  first token  arrival of the first chunk carrying generated text (chat `delta.content`, or
               `delta.reasoning_content` as vLLM counts it; completions `text`); TTFT = first - start
  chunks       arrival of every such chunk; ITL as bench_serving defines it (spectui.load.record)
  end          when the stream finished (`data: [DONE]`, as SGLang's `latency`); E2E = end - start
  output       `usage.completion_tokens` from the final usage chunk (`stream_options.include_usage`)
Chunks arriving in the same network read share one timestamp: they arrived together.

The HTTP client is aiohttp, bench_serving's own, chosen by measurement (perf/perf_bench.py): against a
fast server at concurrency 32-64 httpx delivered response headers 16-65 ms after the request was sent,
aiohttp 4-20 ms, and that delay is TTFT the server never spent. One pooled session (keep-alive), a
connection per concurrent request.

Per-chunk token counts are known when the server repeats usage on every chunk
(`stream_options.continuous_usage_stats`, which SGLang and vLLM honour) or sends `meta_info`; else None.

A request fails with an error kind, never an exception: `HTTP 500`, `stream error 400`, a transport
kind (`ConnectError`, `ConnectTimeout`, `ReadTimeout`, `RemoteProtocolError`: the server closed the
connection mid-answer; other client errors by their class name), `RequestTimeout` (no complete answer
within the request's total deadline, `--request-timeout`), `IncompleteStream` (closed before
`[DONE]` without usage and a finish reason), `BadChunk` (a data line that is not JSON), `NoTokens`
(a complete stream without any generated text: no TTFT can be measured).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from spectui.load.errors import (
    NotOpenAIServerError,
    ServerAuthError,
    ServerNotReadyError,
    ServerUnreachableError,
)
from spectui.load.prompts import Prompt
from spectui.load.record import RequestRecord
from spectui.load.specfields import collect

ERROR_DETAIL_CHARS = 300


def normalize_base_url(url: str) -> str:
    """`host:port`, `http://host:port/`, `http://host:port/v1` -> `http://host:port`."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    url = url.rstrip("/")
    return url.removesuffix("/v1")


@dataclass(frozen=True, slots=True)
class ServerProbe:
    base_url: str
    model: str  # data[0].id of /v1/models: the served model name
    models: tuple[str, ...]
    owned_by: str | None


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def probe_server(http: aiohttp.ClientSession, base_url: str, *, timeout_s: float = 10.0) -> ServerProbe:
    """GET /v1/models: the served model name, or a clear BenchError when nothing usable answers."""
    url = f"{base_url}/v1/models"
    try:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            status, kind = resp.status, resp.headers.get("content-type", "?").split(";")[0]
            raw = await resp.read()
    except (aiohttp.ClientConnectorError, ConnectionRefusedError) as exc:
        raise ServerUnreachableError(f"cannot connect to {base_url} ({_reason(exc)}): is the server running on "
                                     "that port, and the SSH forward up for a remote target?") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise ServerUnreachableError(f"{base_url} took the connection but GET /v1/models failed "
                                     f"({error_kind(exc)}: {_reason(exc)}): not an HTTP server that "
                                     "answers, or it is hung") from None
    if status in (401, 403):
        raise ServerAuthError(f"GET {url} answered HTTP {status}: the server wants an API key "
                              "(pass the one it was launched with, --api-key)")
    if status == 503:
        raise ServerNotReadyError(f"GET {url} answered 503: the server is still starting (or shutting "
                                  "down); wait for /health to answer 200 and retry")
    if status != 200:
        raise NotOpenAIServerError(f"GET {url} answered HTTP {status}: not an OpenAI-compatible "
                                   "server (SGLang serves /v1/models); check the port")
    try:
        body = json.loads(raw)
        data = body["data"]
        models = tuple(str(m["id"]) for m in data)
    except (ValueError, KeyError, TypeError):
        raise NotOpenAIServerError(f"GET {url} answered 200 with {kind}, not an OpenAI model list: not an "
                                   "OpenAI-compatible server; check the port") from None
    if not models:
        raise NotOpenAIServerError(f"GET {url} lists no model: the server serves nothing to benchmark")
    owned = data[0].get("owned_by") if isinstance(data[0], dict) else None
    return ServerProbe(base_url, models[0], models, owned)


def build_payload(prompt: Prompt, *, endpoint: str, model: str, max_tokens: int, temperature: float,
                  ignore_eos: bool = False, spec_details: bool = True,
                  extra: dict[str, Any] | None = None,
                  messages: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """`messages`: a multi-turn turn's whole history (chat), instead of the prompt's own."""
    if prompt.output_len is not None:  # the workload's own length (random, ShareGPT)
        max_tokens = prompt.output_len
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": temperature,
                            "stream": True,
                            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    if endpoint == "chat":
        body["messages"] = messages if messages is not None else prompt.as_messages()
    else:
        body["prompt"] = prompt.text if prompt.text is not None else "\n\n".join(
            m["content"] for m in prompt.as_messages())
    if spec_details:
        body["return_spec_tokens_details"] = True  # SGLang extension: sglext.spec_tokens_details
    if ignore_eos:
        body["ignore_eos"] = True
    if extra:
        body.update(extra)
    return body


MAX_SSE_LINE = 8 << 20  # bytes of one server-sent event line (a chunk of a few tokens is well under 1 KiB)


class _Stream:
    """Incremental SSE parser feeding one RequestRecord."""

    def __init__(self, rec: RequestRecord, on_tokens: Callable[[float, int | None], None] | None) -> None:
        self.rec, self.on_tokens = rec, on_tokens
        self.buf = b""
        self.data: list[bytes] = []
        self.done = False
        self.done_t: float | None = None
        self.usage_seen = False
        self.last_count = 0  # completion tokens the server last reported (continuous usage)
        self.count_known = False

    def feed(self, chunk: bytes, t: float) -> None:
        buf = self.buf + chunk
        *lines, self.buf = buf.split(b"\n")
        if len(self.buf) > MAX_SSE_LINE:  # one event line no server sends: stop before memory grows with it
            raise _StreamFailure("ProtocolError", f"an event line over {MAX_SSE_LINE >> 20} MiB without a newline")
        for line in lines:
            self._line(line.rstrip(b"\r"), t)

    def close(self, t: float) -> None:
        if self.buf:
            self._line(self.buf.rstrip(b"\r"), t)
            self.buf = b""
        self._line(b"", t)

    def _line(self, line: bytes, t: float) -> None:
        if not line:  # end of an SSE event
            if self.data:
                data, self.data = b"\n".join(self.data), []
                self._event(data, t)
            return
        if line.startswith(b"data:"):
            self.data.append(line[5:].lstrip(b" "))
        # `event:`, `id:`, `retry:` and `:comment` lines carry nothing we time

    def _event(self, data: bytes, t: float) -> None:
        if data == b"[DONE]":
            self.done, self.done_t = True, t
            return
        try:
            obj = json.loads(data)
        except ValueError:
            raise _StreamFailure("BadChunk", data[:ERROR_DETAIL_CHARS].decode("utf-8", "replace")) from None
        if not isinstance(obj, dict):
            raise _StreamFailure("BadChunk", data[:ERROR_DETAIL_CHARS].decode("utf-8", "replace"))
        rec = self.rec
        if obj.get("error") or obj.get("object") == "error":
            err = obj.get("error") if isinstance(obj.get("error"), dict) else obj
            code = err.get("code")
            raise _StreamFailure(f"stream error {code}" if code else "stream error", str(err.get("message")))
        collect(rec.spec, obj)
        count = self._count(obj)
        text = False
        choices = obj.get("choices")
        if choices and isinstance(choices, list) and isinstance(choices[0], dict):
            c = choices[0]
            delta = c.get("delta")
            piece = delta.get("content") if isinstance(delta, dict) else c.get("text")
            if isinstance(delta, dict):
                text = bool(piece or delta.get("reasoning_content"))
            else:
                text = bool(piece)
            if rec.text is not None and isinstance(piece, str) and piece:
                rec.text.append(piece)
            if c.get("finish_reason"):
                rec.finish_reason = str(c["finish_reason"])
        if text:
            if rec.first_token is None:
                rec.first_token = t
            rec.chunk_times.append(t)
            n = None
            if count is not None:
                n, self.last_count = count - self.last_count, count
            rec.chunk_tokens.append(n)
            if n is None:
                rec.streamed_unknown += 1
            else:
                rec.streamed_tokens += n
            if self.on_tokens is not None:
                self.on_tokens(t, n)

    def _count(self, obj: dict[str, Any]) -> int | None:
        """Completion tokens so far, if this chunk says (usage or meta_info)."""
        usage = obj.get("usage")
        value = None
        if isinstance(usage, dict):
            value = usage.get("completion_tokens")
            if isinstance(value, int):
                self.usage_seen = True
                self.rec.output_tokens, self.rec.output_tokens_source = value, "usage"
                if isinstance(usage.get("prompt_tokens"), int):
                    self.rec.prompt_tokens = usage["prompt_tokens"]
        meta = obj.get("meta_info")
        if not isinstance(value, int) and isinstance(meta, dict):
            value = meta.get("completion_tokens")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


class _StreamFailure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def error_kind(exc: BaseException) -> str:
    """A transport failure's kind, the same names whatever the HTTP client (see the module docstring)."""
    if isinstance(exc, aiohttp.ClientConnectorError | ConnectionRefusedError):
        return "ConnectError"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "ConnectTimeout"
    if isinstance(exc, TimeoutError):
        return "ReadTimeout"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientOSError
                  | ConnectionResetError):
        return "RemoteProtocolError"
    return type(exc).__name__


def _reason(exc: BaseException) -> str:
    """A short reason, from the innermost OS error when there is one ("connection refused")."""
    seen: BaseException | None = getattr(exc, "os_error", None) or exc  # aiohttp's connector errors
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror.lower()
        seen = seen.__cause__ or seen.__context__
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:ERROR_DETAIL_CHARS]


async def stream_request(http: aiohttp.ClientSession, url: str, body: dict[str, Any], rec: RequestRecord, *,
                         headers: dict[str, str] | None = None,
                         on_tokens: Callable[[float, int | None], None] | None = None,
                         deadline_s: float | None = None) -> RequestRecord:
    """POST `body` to `url`, stream the answer into `rec`. Never raises for a failed request.
    `deadline_s`: the whole request (connect, headers, every chunk, [DONE]) within that many seconds, else
    it fails as `RequestTimeout` (a server trickling a byte every few seconds never trips a read timeout)."""
    parser = _Stream(rec, on_tokens)
    data = json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    rec.start_wall, rec.start = time.time(), time.perf_counter()
    limit = asyncio.timeout(deadline_s)
    try:
        async with limit, http.post(url, data=data, headers=hdrs) as resp:
            rec.status = resp.status
            if resp.status != 200:
                raw = await resp.content.read(ERROR_DETAIL_CHARS * 4)  # the start says why; never the whole body
                rec.end = time.perf_counter()
                rec.error = f"HTTP {resp.status}"
                rec.error_detail = raw[:ERROR_DETAIL_CHARS].decode("utf-8", "replace") or None
                return rec
            async for chunk in resp.content.iter_any():
                parser.feed(chunk, time.perf_counter())
            parser.close(time.perf_counter())
    except _StreamFailure as exc:
        rec.error, rec.error_detail = exc.kind, exc.detail
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        if limit.expired():
            rec.error = "RequestTimeout"
            rec.error_detail = (f"no complete answer within {deadline_s:g} s (--request-timeout); "
                                f"{len(rec.chunk_times)} text chunks had arrived")
        elif not (parser.done and isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError)):
            rec.error, rec.error_detail = error_kind(exc), _reason(exc)
    rec.end = parser.done_t or time.perf_counter()
    if rec.error is None:
        _finish(rec, parser)
    return rec


async def post_json(http: aiohttp.ClientSession, url: str, *, timeout_s: float = 60.0,
                    params: dict[str, str] | None = None) -> tuple[int, str]:
    """POST with no body (SGLang's /flush_cache): (status, the answer's text)."""
    async with http.post(url, params=params, timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
        return resp.status, (await resp.text(errors="replace"))[:ERROR_DETAIL_CHARS]


def _finish(rec: RequestRecord, parser: _Stream) -> None:
    complete = parser.done or (parser.usage_seen and rec.finish_reason is not None)
    if not complete:
        rec.error, rec.error_detail = "IncompleteStream", "the stream closed before [DONE]"
        return
    if not rec.chunk_times:
        rec.error, rec.error_detail = "NoTokens", "the stream carried no generated text"
        return
    if not parser.usage_seen:
        known = [n for n in rec.chunk_tokens if n is not None]
        rec.output_tokens = sum(known) if len(known) == len(rec.chunk_tokens) else len(rec.chunk_times)
        rec.output_tokens_source = "chunks"
