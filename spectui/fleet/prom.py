"""A small client for Prometheus's HTTP API (/api/v1/query, /api/v1/targets) over httpx.

Responses are the documented envelope `{"status": "success"|"error", "data", "errorType", "error",
"warnings"}`; 400 means a bad parameter (our selector: input error), 422 an expression that cannot be
executed, 503 a query that timed out or aborted. Every failure becomes a FleetInputError (exit 2) or a
PrometheusError (exit 1) with a one-line message naming the URL.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from spectui.core import limits as lim
from spectui.fleet.errors import FleetInputError, PrometheusError

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Sample:
    """One series of an instant vector: its labels (without __name__ folded away) and its value."""

    labels: dict[str, str]
    value: float

    @property
    def name(self) -> str:
        """The metric's name as SGLang's registry names it (`sglang:num_running_reqs`). A scrape in OpenMetrics
        (what Prometheus asks for first) of a newer prometheus_client gives `sglang_num_running_reqs` (the real
        0.5.16 server does): both are the same metric."""
        name = self.labels.get("__name__", "")
        return "sglang:" + name[7:] if name.startswith("sglang_") else name


@dataclass(frozen=True, slots=True)
class Target:
    """An active scrape target from /api/v1/targets."""

    job: str
    instance: str
    health: str  # "up", "down" or "unknown"
    last_error: str
    scrape_url: str


def normalize_url(url: str) -> str:
    """`host:9090` -> `http://host:9090`; trailing slashes dropped; a path prefix (behind a proxy) kept."""
    text = (url or "").strip()
    if not text:
        raise FleetInputError("--prometheus: give the Prometheus server's URL, e.g. http://127.0.0.1:9090")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in text):
        raise FleetInputError(f"--prometheus {url!r}: not an http(s) URL; e.g. http://127.0.0.1:9090")
    try:
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise FleetInputError(f"--prometheus {url!r}: bad port") from None
    return text.rstrip("/")


_NAME_BEFORE_BRACE = re.compile(r"^\s*[A-Za-z_:][A-Za-z0-9_:]*\s*\{")


def normalize_selector(selector: str | None) -> str:
    """The label matchers inside the braces: `job="sglang"`, `{job="sglang"}` -> `job="sglang"`; None -> ""."""
    text = (selector or "").strip()
    if _NAME_BEFORE_BRACE.match(text):
        raise FleetInputError(f"--selector {selector!r}: give label matchers only (e.g. job=\"sglang\"), "
                              "without a metric name")
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if "{" in text or "}" in text:
        raise FleetInputError(f"--selector {selector!r}: unbalanced braces; e.g. --selector 'job=\"sglang\"'")
    return text.rstrip(",").strip()


def _float(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def masked_url(url: str) -> str:
    """`http://admin:pw@prom:9090` -> `http://admin:***@prom:9090`: what is shown, printed and recorded."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class _TooLarge(Exception):
    pass


class PrometheusClient:
    """Instant queries and the target list of one Prometheus server. Credentials in the URL
    (`http://user:pw@prom:9090`) go to Prometheus as basic auth; `url` (every message, the JSON) masks them.

    Every answer is read within `max_bytes` (core.limits.HTTP_PROMETHEUS_BYTES) and a total deadline
    (`deadline`, default twice the per-read `timeout`): a huge answer or one trickled a byte at a time is
    refused with one line, never a MemoryError or a hang. Requests run on the client's own event loop
    (call from a thread without a running one: the CLI, or the cockpit's worker thread); close() ends it."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, transport: Any = None,
                 deadline: float | None = None, max_bytes: int = lim.HTTP_PROMETHEUS_BYTES) -> None:
        real = normalize_url(url)
        self.url = masked_url(real)
        self._real, self._timeout, self._transport, self._max = real, timeout, transport, max_bytes
        self.deadline = deadline if deadline is not None else 2 * timeout
        self._loop: asyncio.AbstractEventLoop | None = None  # its own, reused: one connection pool
        self._http: httpx.AsyncClient | None = None
        self._lock = threading.Lock()  # one request at a time, from whichever thread asks

    def close(self) -> None:
        with self._lock:
            if self._loop is not None:
                if self._http is not None:
                    self._loop.run_until_complete(self._http.aclose())
                self._loop.close()
            self._loop, self._http = None, None

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _fetch(self, path: str, params: dict[str, str] | None) -> tuple[int, bytes]:
        if self._http is None:
            self._http = httpx.AsyncClient(base_url=self._real, timeout=self._timeout, transport=self._transport,
                                           headers={"Accept": "application/json"})
        async with asyncio.timeout(self.deadline), self._http.stream("GET", path, params=params) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():  # decoded: a gzip bomb counts at its inflated size
                body += chunk
                if len(body) > self._max:
                    raise _TooLarge
            return response.status_code, bytes(body)

    def _run(self, path: str, params: dict[str, str] | None) -> tuple[int, bytes]:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(self._fetch(path, params))

    def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        try:
            status, raw = self._run(path, params)
        except httpx.ConnectError as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {_reason(exc)}; "
                                  "is it running, and is --prometheus right?") from None
        except (httpx.TimeoutException, TimeoutError):
            raise PrometheusError(f"Prometheus at {self.url} did not answer {path} in time (whole answer "
                                  f"within {self.deadline:g} s); retry, or raise --timeout") from None
        except _TooLarge:
            raise PrometheusError(f"Prometheus at {self.url} answered {path} with more than "
                                  f"{self._max >> 20} MiB: refused (narrow --selector)") from None
        except httpx.HTTPError as exc:
            raise PrometheusError(f"cannot talk to Prometheus at {self.url}: {_reason(exc)}") from None
        try:
            body = lim.load_json(raw)
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or "status" not in body:
            if status in (401, 403):
                raise PrometheusError(f"Prometheus at {self.url} refused {path} (HTTP {status}): "
                                      "it needs credentials spectui does not send")
            if status >= 500:
                raise PrometheusError(f"Prometheus at {self.url} failed (HTTP {status} on {path})")
            raise FleetInputError(f"{self.url} does not look like a Prometheus server (HTTP "
                                  f"{status}, no API answer on {path}); check --prometheus")
        if body.get("status") != "success":
            error = " ".join(str(body.get("error") or "unknown error").split())
            if body.get("errorType") == "bad_data" or status == 400:
                raise FleetInputError(f"Prometheus at {self.url} rejects the query: {error}")
            raise PrometheusError(f"Prometheus at {self.url}: {body.get('errorType') or 'error'}: {error}")
        return body.get("data")

    def query(self, expr: str) -> list[Sample]:
        """An instant query; a vector (or scalar) result as Samples."""
        data = self._get("/api/v1/query", {"query": expr})
        if not isinstance(data, dict):
            raise PrometheusError(f"Prometheus at {self.url} answered {expr!r} without data")
        result = data.get("result")
        if data.get("resultType") == "scalar" and isinstance(result, list) and len(result) == 2:
            return [Sample({}, _float(result[1]))]
        out: list[Sample] = []
        for item in result if isinstance(result, list) else []:
            if not isinstance(item, dict):
                continue
            value = item.get("value")
            metric = item.get("metric")
            if isinstance(value, list) and len(value) == 2 and isinstance(metric, dict):
                out.append(Sample({str(k): str(v) for k, v in metric.items()}, _float(value[1])))
        return out

    def targets(self) -> list[Target]:
        """Active scrape targets (health, last scrape error)."""
        data = self._get("/api/v1/targets", {"state": "active"})
        out: list[Target] = []
        items = data.get("activeTargets") if isinstance(data, dict) else None
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            labels = item.get("labels") if isinstance(item.get("labels"), dict) else {}
            out.append(Target(job=str(labels.get("job", "")), instance=str(labels.get("instance", "")),
                              health=str(item.get("health", "unknown")),
                              last_error=str(item.get("lastError") or ""),
                              scrape_url=str(item.get("scrapeUrl") or "")))
        return out


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    cause: BaseException | None = exc
    while cause is not None:  # the async transport words a refusal "All connection attempts failed"
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return "connection refused"
        cause = cause.__cause__ or cause.__context__
    return text or type(exc).__name__
