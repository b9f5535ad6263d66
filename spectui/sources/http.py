"""ServerProbe: an SGLang server's /health, /server_info and /metrics over httpx, tunnelled when remote.

The port is reached through `host.forward_port` (an SSH local forward for a remote host), so it need not
be exposed. `/get_server_info` is used only when `/server_info` answers 404 (releases before 0.5.6):
polling the deprecated endpoint makes newer servers log a warning on every call (docs/REFERENCE.md §4.1).
`/metrics` is parsed with prometheus_client's own text parser.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from spectui.core import limits as lim
from spectui.core.text import terminal_safe
from spectui.errors import ProbeError, SpectuiError
from spectui.sources.base import Host


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    status_code: int | None  # None: no answer at all
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MetricSample:
    name: str  # verbatim sample name, e.g. "sglang:spec_accept_length"
    labels: dict[str, str]
    value: float


class ServerProbe:
    """One SGLang server's HTTP endpoints. `await start()` opens the tunnel; `close()` ends it."""

    def __init__(self, host: Host, port: int, addr: str = "127.0.0.1", *, timeout: float = 5.0,
                 api_key: str | None = None, deadline: float | None = None) -> None:
        self.host, self.port, self.addr, self.timeout = host, port, addr, timeout
        self.deadline = deadline if deadline is not None else max(2 * timeout, 5.0)  # whole request
        self.info_path: str | None = None  # "/server_info" or "/get_server_info" once known
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None
        self.base_url = ""

    async def start(self) -> None:
        local_port = await self.host.forward_port(self.port, self.addr)
        addr = "127.0.0.1" if self.host.name != "local" else self.addr
        self.base_url = f"http://{addr}:{local_port}"
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout, headers=self._headers,
                                         trust_env=False)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _get(self, path: str) -> httpx.Response:
        """GET `path`, its body read within a size cap (core.limits: /metrics HTTP_METRICS_BYTES, any other
        HTTP_JSON_BYTES) and a total deadline (`deadline`): a huge answer, or one sent a byte every few
        seconds, is one ProbeError, never a MemoryError or a hang."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        cap = lim.HTTP_METRICS_BYTES if path.startswith("/metrics") else lim.HTTP_JSON_BYTES
        try:
            async with asyncio.timeout(self.deadline), self._client.stream("GET", path) as resp:
                body = bytearray()
                async for chunk in resp.aiter_bytes():  # decoded: a gzip bomb counts at its inflated size
                    body += chunk
                    if len(body) > cap:
                        raise ProbeError(f"{self._where()}{path} answered more than {cap >> 20} MiB: refused "
                                         "(is that an SGLang server?)")
        except (httpx.TimeoutException, TimeoutError):
            raise ProbeError(f"{self._where()}{path} timed out (no complete answer within {self.deadline:g} s); "
                             "the server may be busy or starting") from None
        except httpx.HTTPError as exc:
            raise ProbeError(f"{self._where()}{path}: no answer ({type(exc).__name__}); is the server running "
                             "on that port? (--server-port)") from None
        headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length",
                                                                                 "transfer-encoding")]
        return httpx.Response(resp.status_code, headers=headers, content=bytes(body), request=resp.request)

    def _where(self) -> str:
        return f"{self.host.name} port {self.port} "

    async def health(self) -> Health:
        try:
            resp = await self._get("/health")
        except ProbeError as exc:
            return Health(False, None, str(exc))
        # 503 while starting / shutting down (0.5.1+); anything else non-200 is unhealthy too.
        return Health(resp.status_code == 200, resp.status_code, terminal_safe(resp.text, 200))  # data, shown

    async def server_info(self) -> dict[str, Any]:
        paths = [self.info_path] if self.info_path else ["/server_info", "/get_server_info"]
        for path in paths:
            resp = await self._get(path)
            if resp.status_code == 404 and path == "/server_info" and not self.info_path:
                continue  # an older release: fall back once and remember
            if resp.status_code != 200:
                raise ProbeError(f"{self._where()}{path} answered {resp.status_code}: {terminal_safe(resp.text, 120)!r}")
            self.info_path = path
            try:
                data = lim.load_json(resp.content)
            except lim.JsonTooDeepError as exc:
                raise ProbeError(f"{self._where()}{path}: {exc}: refused") from None
            except (ValueError, UnicodeDecodeError):
                raise ProbeError(f"{self._where()}{path} did not return JSON") from None
            if not isinstance(data, dict):
                raise ProbeError(f"{self._where()}{path} returned {type(data).__name__}, not an object")
            return data
        raise ProbeError(f"{self._where()}has neither /server_info nor /get_server_info")

    async def metrics(self) -> list[MetricSample]:
        """Every sample of /metrics. Raises ProbeError (with the fix) when metrics are not enabled."""
        from prometheus_client.parser import text_string_to_metric_families

        resp = await self._get("/metrics")
        if resp.status_code == 404:
            raise ProbeError(f"{self._where()}has no /metrics: the server was started without "
                             "--enable-metrics (add it on the next relaunch)")
        if resp.status_code != 200:
            raise ProbeError(f"{self._where()}/metrics answered {resp.status_code}")
        try:
            return [MetricSample(s.name, dict(s.labels), float(s.value))
                    for fam in text_string_to_metric_families(resp.text) for s in fam.samples]
        except ValueError as exc:
            raise ProbeError(f"{self._where()}/metrics is not Prometheus text: {str(exc)[:120]}") from None


async def server_version(host: Host, port: int, addr: str = "127.0.0.1", api_key: str | None = None) -> str | None:
    """The running server's own version (/server_info `version`), or None when it does not answer.
    `api_key`: the server's --api-key (sources.discover.server_api_key), without which SGLang answers 401."""
    probe = ServerProbe(host, port, addr, timeout=3.0, api_key=api_key)
    try:
        version = (await probe.server_info()).get("version")
        return str(version) if version else None
    except (SpectuiError, OSError):
        return None
    finally:
        await probe.close()


def metric_value(samples: list[MetricSample], name: str) -> float | None:
    """The value of a gauge summed over label sets (DP ranks), or None when absent."""
    values = [s.value for s in samples if s.name == name]
    return sum(values) if values else None


def spec_accept_length(info: dict[str, Any]) -> float | None:
    """avg_spec_accept_length from /server_info: under internal_states (0.4.9+) or top level (0.4.6)."""
    states = info.get("internal_states")
    if isinstance(states, list):
        vals = [s.get("avg_spec_accept_length") for s in states if isinstance(s, dict)]
        nums = [float(v) for v in vals if isinstance(v, (int, float))]
        return sum(nums) / len(nums) if nums else None
    v = info.get("avg_spec_accept_length")
    return float(v) if isinstance(v, (int, float)) else None
