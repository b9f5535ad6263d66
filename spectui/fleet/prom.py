"""A small client for Prometheus's HTTP API (/api/v1/query, /api/v1/targets) over httpx.

Responses are the documented envelope `{"status": "success"|"error", "data", "errorType", "error",
"warnings"}`; 400 means a bad parameter (our selector: input error), 422 an expression that cannot be
executed, 503 a query that timed out or aborted. Every failure becomes a FleetInputError (exit 2) or a
PrometheusError (exit 1) with a one-line message naming the URL.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from spectui.fleet.errors import FleetInputError, PrometheusError

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Sample:
    """One series of an instant vector: its labels (without __name__ folded away) and its value."""

    labels: dict[str, str]
    value: float

    @property
    def name(self) -> str:
        return self.labels.get("__name__", "")


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


class PrometheusClient:
    """Instant queries and the target list of one Prometheus server. Credentials in the URL
    (`http://user:pw@prom:9090`) go to Prometheus as basic auth; `url` (every message, the JSON) masks them."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, transport: Any = None) -> None:
        real = normalize_url(url)
        self.url = masked_url(real)
        self._http = httpx.Client(base_url=real, timeout=timeout, transport=transport,
                                  headers={"Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        try:
            response = self._http.get(path, params=params)
        except httpx.ConnectError as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {_reason(exc)}; "
                                  "is it running, and is --prometheus right?") from None
        except httpx.TimeoutException:
            raise PrometheusError(f"Prometheus at {self.url} did not answer {path} in time; "
                                  "retry, or raise --timeout") from None
        except httpx.HTTPError as exc:
            raise PrometheusError(f"cannot talk to Prometheus at {self.url}: {_reason(exc)}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or "status" not in body:
            if response.status_code in (401, 403):
                raise PrometheusError(f"Prometheus at {self.url} refused {path} (HTTP {response.status_code}): "
                                      "it needs credentials spectui does not send")
            if response.status_code >= 500:
                raise PrometheusError(f"Prometheus at {self.url} failed (HTTP {response.status_code} on {path})")
            raise FleetInputError(f"{self.url} does not look like a Prometheus server (HTTP "
                                  f"{response.status_code}, no API answer on {path}); check --prometheus")
        if body.get("status") != "success":
            error = " ".join(str(body.get("error") or "unknown error").split())
            if body.get("errorType") == "bad_data" or response.status_code == 400:
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
        for item in (data or {}).get("activeTargets") or []:
            labels = item.get("labels") or {}
            out.append(Target(job=str(labels.get("job", "")), instance=str(labels.get("instance", "")),
                              health=str(item.get("health", "unknown")),
                              last_error=str(item.get("lastError") or ""),
                              scrape_url=str(item.get("scrapeUrl") or "")))
        return out


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if "refused" in text.lower():
        return "connection refused"
    return text or type(exc).__name__
