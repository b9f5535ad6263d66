"""One streamed request against an OpenAI-compatible server, timed the way SGLang's bench_serving does it.

Timing (sglang/bench_serving.py, async_request_openai_chat_completions / _completions; vLLM's
benchmarks/lib/endpoint_request_func.py is the same apart from the notes below):
  start        perf_counter() just before the POST is sent
  first token  arrival of the first chunk carrying generated text (chat `delta.content`, or
               `delta.reasoning_content` as vLLM counts it; completions `text`); TTFT = first - start
  chunks       arrival of every such chunk; ITL = the gaps between consecutive ones (one gap per chunk,
               not per token: with speculation one chunk carries several tokens)
  end          when the stream finished (`data: [DONE]`, as SGLang's `latency`); E2E = end - start
  output       `usage.completion_tokens` from the final usage chunk (`stream_options.include_usage`)
Chunks arriving in the same network read share one timestamp: they arrived together.

Per-chunk token counts are known when the server repeats usage on every chunk
(`stream_options.continuous_usage_stats`, which SGLang and vLLM honour) or sends `meta_info`; else None.

A request fails with an error kind, never an exception: `HTTP 500`, `stream error 400`, an exception
class (`ConnectError`, `ReadTimeout`, `RemoteProtocolError`, ...), `IncompleteStream` (closed before
`[DONE]` without usage and a finish reason), `BadChunk` (a data line that is not JSON), `NoTokens`
(a complete stream without any generated text: no TTFT can be measured).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from spectui.load.errors import (
    NotOpenAIServerError,
    ServerAuthError,
    ServerNotReadyError,
    ServerUnreachableError,
)
from spectui.load.prompts import Prompt
from spectui.load.specfields import SpecFields, collect

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


@dataclass
class RequestRecord:
    """Everything measured for one request. Times are time.perf_counter() seconds."""

    index: int
    prompt_id: str
    endpoint: str  # "chat" | "completions"
    warmup: bool
    start: float = 0.0
    start_wall: float = 0.0  # time.time() at start (to match server-side logs and counters)
    first_token: float | None = None
    end: float | None = None
    chunk_times: list[float] = field(default_factory=list)  # chunks carrying generated text
    chunk_tokens: list[int | None] = field(default_factory=list)  # tokens in each, when the server said
    output_tokens: int | None = None
    output_tokens_source: str | None = None  # "usage" | "chunks"
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    status: int | None = None
    error: str | None = None  # the error kind; None = success
    error_detail: str | None = None
    spec: SpecFields = field(default_factory=SpecFields)
    streamed_tokens: int = 0  # live, while streaming: tokens the server reported per chunk ...
    streamed_unknown: int = 0  # ... plus chunks whose token count it did not report (counted 1 each)

    @property
    def ok(self) -> bool:
        return self.error is None and self.end is not None

    @property
    def end_wall(self) -> float | None:
        return None if self.end is None else self.start_wall + (self.end - self.start)

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.start

    @property
    def e2e(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def tpot(self) -> float | None:
        """(e2e - ttft) / (output_tokens - 1), only when output_tokens > 1 (bench_serving)."""
        if not self.ok or not self.output_tokens or self.output_tokens <= 1 or self.ttft is None:
            return None
        return (self.e2e - self.ttft) / (self.output_tokens - 1)  # type: ignore[operator]

    @property
    def decode_tokens_per_s(self) -> float | None:
        """(output_tokens - 1) / (e2e - ttft): this request's decode speed after its first token."""
        tpot = self.tpot
        return 1.0 / tpot if tpot else None

    @property
    def itls(self) -> list[float]:
        t = self.chunk_times
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    def to_json(self) -> dict[str, Any]:
        ms = (lambda x: None if x is None else round(x * 1000, 3))  # noqa: E731
        return {"index": self.index, "prompt": self.prompt_id, "endpoint": self.endpoint, "ok": self.ok,
                "error": self.error, "error_detail": self.error_detail, "status": self.status,
                "start": self.start_wall, "end": self.end_wall, "ttft_ms": ms(self.ttft),
                "e2e_ms": ms(self.e2e), "tpot_ms": ms(self.tpot), "chunks": len(self.chunk_times),
                "output_tokens": self.output_tokens, "output_tokens_source": self.output_tokens_source,
                "prompt_tokens": self.prompt_tokens, "finish_reason": self.finish_reason,
                "spec": self.spec.to_json() if self.spec else None}


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def probe_server(http: httpx.AsyncClient, base_url: str, *, timeout_s: float = 10.0) -> ServerProbe:
    """GET /v1/models: the served model name, or a clear BenchError when nothing usable answers."""
    url = f"{base_url}/v1/models"
    try:
        resp = await http.get(url, timeout=timeout_s)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        why = _reason(exc)
        raise ServerUnreachableError(f"cannot connect to {base_url} ({why}): is the server running on that "
                                     "port, and the SSH forward up for a remote target?") from None
    except httpx.TransportError as exc:
        raise ServerUnreachableError(f"{base_url} took the connection but GET /v1/models failed "
                                     f"({type(exc).__name__}: {_reason(exc)}): not an HTTP server that "
                                     "answers, or it is hung") from None
    if resp.status_code in (401, 403):
        raise ServerAuthError(f"GET {url} answered HTTP {resp.status_code}: the server wants an API key "
                              "(pass the one it was launched with, --api-key)")
    if resp.status_code == 503:
        raise ServerNotReadyError(f"GET {url} answered 503: the server is still starting (or shutting "
                                  "down); wait for /health to answer 200 and retry")
    if resp.status_code != 200:
        raise NotOpenAIServerError(f"GET {url} answered HTTP {resp.status_code}: not an OpenAI-compatible "
                                   "server (SGLang serves /v1/models); check the port")
    try:
        body = resp.json()
        data = body["data"]
        models = tuple(str(m["id"]) for m in data)
    except (ValueError, KeyError, TypeError):
        kind = resp.headers.get("content-type", "?").split(";")[0]
        raise NotOpenAIServerError(f"GET {url} answered 200 with {kind}, not an OpenAI model list: not an "
                                   "OpenAI-compatible server; check the port") from None
    if not models:
        raise NotOpenAIServerError(f"GET {url} lists no model: the server serves nothing to benchmark")
    owned = data[0].get("owned_by") if isinstance(data[0], dict) else None
    return ServerProbe(base_url, models[0], models, owned)


def build_payload(prompt: Prompt, *, endpoint: str, model: str, max_tokens: int, temperature: float,
                  ignore_eos: bool = False, spec_details: bool = True,
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": temperature,
                            "stream": True,
                            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    if endpoint == "chat":
        body["messages"] = prompt.as_messages()
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
            if isinstance(delta, dict):
                text = bool(delta.get("content") or delta.get("reasoning_content"))
            else:
                text = bool(c.get("text"))
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


def _reason(exc: BaseException) -> str:
    """A short reason, from the innermost OS error when there is one ("connection refused")."""
    seen: BaseException | None = exc
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


async def stream_request(http: httpx.AsyncClient, url: str, body: dict[str, Any], rec: RequestRecord, *,
                         headers: dict[str, str] | None = None,
                         on_tokens: Callable[[float, int | None], None] | None = None) -> RequestRecord:
    """POST `body` to `url`, stream the answer into `rec`. Never raises for a failed request."""
    parser = _Stream(rec, on_tokens)
    rec.start_wall, rec.start = time.time(), time.perf_counter()
    try:
        async with http.stream("POST", url, json=body, headers=headers) as resp:
            rec.status = resp.status_code
            if resp.status_code != 200:
                raw = await resp.aread()
                rec.end = time.perf_counter()
                rec.error = f"HTTP {resp.status_code}"
                rec.error_detail = raw[:ERROR_DETAIL_CHARS].decode("utf-8", "replace") or None
                return rec
            async for chunk in resp.aiter_bytes():
                parser.feed(chunk, time.perf_counter())
            parser.close(time.perf_counter())
    except _StreamFailure as exc:
        rec.error, rec.error_detail = exc.kind, exc.detail
    except httpx.HTTPError as exc:
        rec.error, rec.error_detail = type(exc).__name__, _reason(exc)
    except OSError as exc:
        rec.error, rec.error_detail = type(exc).__name__, _reason(exc)
    rec.end = parser.done_t or time.perf_counter()
    if rec.error is None:
        _finish(rec, parser)
    return rec


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
