"""The dashboard's stale figures (a mixin): the speculative panel's numbers come from the log's last decode
line, so when the server is gone or no decode line came for a while (the access log of spectui's own
/health probes does not count) they are said to be old — greyed, "as of
HH:MM:SS" — instead of looking live. A quiet server that still answers gets its idle figures from
`/metrics` as Grafana shows them: running and queued from the gauges, gen tok/s as the rate of the
generation-token counter between two scrapes (0 when nothing is generated), not the last batch's value.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from textual import work

QUIET_AFTER_S = 15.0  # a log silent this long: its last figures are "as of" their time
METRICS_EVERY_S = 5.0  # a quiet server's /metrics, this often


@dataclass(frozen=True, slots=True)
class IdleFigures:
    """A quiet server's load from /metrics (None: the gauge or the counter is absent)."""

    running: float | None
    queued: float | None
    gen_tps: float | None
    at: str  # HH:MM:SS of the scrape


def wall_clock(seconds_ago: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(time.time() - max(0.0, seconds_ago)))


def _value(samples: Any, *names: str) -> float | None:
    from spectui.sources.http import metric_value

    for name in names:
        v = metric_value(samples, name)
        if v is not None:
            return v
    return None


class StaleWatch:
    """Mixed into DashboardScreen (which provides session, clock, health, _last_line_at, cockpit …)."""

    idle: IdleFigures | None = None
    _stale_shown: tuple[str | None, IdleFigures | None] = (None, None)
    _gone_marked: int | None = None  # the pid whose death the phase line ended at
    _figures_of: tuple[Any, int] | None = None  # (snapshot's launch, decode samples) last seen
    _figures_at: float | None = None  # clock() when the figures last changed: the last decode line's arrival

    def _figures_age(self) -> float | None:
        """Seconds since the panel's figures last changed (a decode line; the access log's /health lines of
        spectui's own probes do not count), or None before the first."""
        u: Any = getattr(self, "last_update", None)
        snap = getattr(u, "snapshot", None)
        samples = getattr(snap, "samples", 0) or 0
        if not samples:
            return None
        key = (getattr(snap, "launch", None), samples)
        if key != self._figures_of:
            self._figures_of, self._figures_at = key, self.clock()  # type: ignore[attr-defined]
        return self.clock() - (self._figures_at or 0.0)  # type: ignore[attr-defined]

    def _gone(self) -> bool:
        h = getattr(self, "health", None)
        return h is not None and h.state == "gone"

    def stale_note(self) -> str | None:
        """"as of 21:50:03 · server gone" / "as of … · log silent", or None while the figures are live."""
        s: Any = self.session  # type: ignore[attr-defined]
        age = self._figures_age()
        if s.replay or age is None:
            return None
        if self._gone():
            return f"as of {wall_clock(age)} · server gone"
        if age >= QUIET_AFTER_S:
            return f"as of {wall_clock(age)} · no decode line since"
        return None

    def stale_figures(self) -> tuple[str | None, IdleFigures | None]:
        """(the note, the idle figures) the speculative panel shows with the log's last figures."""
        note = self.stale_note()
        return note, (self.idle if note is not None and not self._gone() else None)

    def stale_tick(self) -> None:
        """Once a second (the dashboard's tick): repaint the panel when its staleness changed; end the phase
        line's current step when the server is gone (it stops counting)."""
        h = getattr(self, "health", None)
        engine = getattr(self.cockpit, "pipeline_engine", None)  # type: ignore[attr-defined]
        if self._gone() and self._gone_marked != h.pid:
            self._gone_marked = h.pid
            self.cockpit.timeline.gone(self.clock())  # type: ignore[attr-defined]
            self._show_timeline()  # type: ignore[attr-defined]
            self._judge_gone(engine, True)  # CRASH008 when the log has no shutdown line and no traceback
        if not self._gone() and self._gone_marked is not None:
            self._gone_marked = None
            self._judge_gone(engine, False)  # a successor answers: no longer "killed"
        shown = self.stale_figures()
        if shown != self._stale_shown:
            self._stale_shown = shown
            self._panels_of = None  # type: ignore[attr-defined]  # (repaint with the same update)
            self._push_panels()  # type: ignore[attr-defined]

    def _judge_gone(self, engine: Any, gone: bool) -> None:
        """Tell the rules the process is gone (or back), and let an idle batch re-judge at once."""
        setter = getattr(engine, "set_process_gone", None)
        if setter is None:
            return
        setter(gone)
        if not self.processing and not self._pending:  # type: ignore[attr-defined]
            self.processing = True  # type: ignore[attr-defined]
            self.process_batch([], finish=False, idle=True)  # type: ignore[attr-defined]

    def start_stale_watch(self) -> None:
        s: Any = self.session  # type: ignore[attr-defined]
        if s.host is not None and not s.replay and s.liveness is not False:
            self.idle_watch()  # type: ignore[attr-defined]

    @work(exclusive=True, group="idle-metrics")
    async def idle_watch(self) -> None:
        """A quiet server's /metrics every METRICS_EVERY_S, through the host's shared prober: tabs of the
        same server share one scrape (sources.probeshare)."""
        import asyncio

        from spectui.sources import probeshare
        from spectui.sources.discover import server_api_key

        s: Any = self.session  # type: ignore[attr-defined]
        shared = probeshare.acquire(s.host)
        prev: tuple[float, float] | None = None  # (clock when scraped, generation tokens counter)
        try:
            while True:
                await asyncio.sleep(METRICS_EVERY_S)
                age = self._figures_age()
                quiet = age is not None and age >= QUIET_AFTER_S
                if not quiet or self._gone():
                    self.idle, prev = None, None
                    continue
                port = s.server_port or getattr(s.server, "port", None)
                if port is None:
                    continue
                argv = getattr(s.server, "argv", None) or (s.launch.argv if s.launch is not None else ())
                try:
                    samples, scraped = await shared.metrics(port, getattr(s.server, "host_addr", None) or "127.0.0.1",
                                                            api_key=server_api_key(list(argv)), timeout=3.0,
                                                            max_age=0.9 * METRICS_EVERY_S)
                except Exception:  # noqa: BLE001 - no /metrics (not enabled, not answering): "as of" only
                    self.idle, prev = None, None
                    continue
                now = self.clock() - scraped  # type: ignore[attr-defined]  # (when it was scraped, by any tab)
                if prev is not None and now <= prev[0] + 1e-3:
                    continue  # the same scrape as last time: the figures stand
                tokens = _value(samples, "sglang:generation_tokens_total", "sglang:generation_tokens")
                tps = None
                if tokens is not None and prev is not None:
                    tps = max(0.0, (tokens - prev[1]) / (now - prev[0]))
                prev = (now, tokens) if tokens is not None else None
                self.idle = IdleFigures(_value(samples, "sglang:num_running_reqs"),
                                        _value(samples, "sglang:num_queue_reqs"), tps, wall_clock(scraped))
        finally:
            with contextlib.suppress(Exception):
                await probeshare.release(shared, s.host)
