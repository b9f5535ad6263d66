"""Speculative panel: accept len now/mean/p10–p90 against its ceiling, recomputed acceptance, tok/s, load, plots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from spectui.core.specdec import theory as specmath
from spectui.ui.model import ConfigView, SeriesHistory
from spectui.ui.widgets.sparkline import sparkline


@dataclass(frozen=True, slots=True)
class SpecData:
    snapshot: Any = None  # core.metrics.MetricSnapshot (duck-typed: only its documented fields are read)
    config: ConfigView = ConfigView()
    history: SeriesHistory = SeriesHistory()
    dp_ranks: int = 1
    baseline: Any = None  # no-spec tok/s (core.rules.match.BaselineTps when its concurrency is known)
    baseline_source: str | None = None  # measured | history | given | simulator
    stale: str | None = None  # "as of 21:50:03 · server gone": the log's figures are old (greyed)
    idle: Any = None  # ui.mixins.stalewatch.IdleFigures: a quiet server's load from /metrics


def _f(value: float | None, fmt: str = ".2f") -> str:
    return "–" if value is None else format(value, fmt)


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


class SpecPanel(Widget):
    """Renders `data`; width-aware so the plots use the space they have."""

    DEFAULT_CSS = """
    SpecPanel { height: 7; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    data: reactive[SpecData] = reactive(SpecData, layout=False)  # fixed height (tcss): no relayout per update

    def render(self) -> Text:
        t = self._figures()
        d = self.data
        if d.stale and d.snapshot is not None and getattr(d.snapshot, "samples", 0):
            t.stylize("dim")  # old figures greyed; what /metrics says now and the note stay bright
            lines = t.plain.split("\n")
            first = len(lines[0])
            t = t[:first] + Text(f"  ({d.stale})", "bold yellow") + t[first:]
            if d.idle is not None:
                t = self._idle_lines(t, d.idle)
        return t

    @staticmethod
    def _idle_lines(t: Text, idle: Any) -> Text:
        """The tok/s and running lines replaced by what /metrics says now (a quiet server: 0)."""
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        for i, line in enumerate(t.split("\n", include_separator=False)):
            if i:
                out.append("\n")
            if line.plain.startswith("gen tok/s "):
                tps = "–" if idle.gen_tps is None else f"{idle.gen_tps:.1f}"
                out.append("gen tok/s ", "bold")
                out.append(tps, "bold cyan")
                out.append(f"  now, from /metrics at {idle.at} (idle)", "cyan")
            elif line.plain.startswith("running "):
                run = "–" if idle.running is None else f"{idle.running:.0f}"
                queued = "–" if idle.queued is None else f"{idle.queued:.0f}"
                out.append(f"running {run}  queued {queued}", "bold")
                out.append("  (/metrics)", "cyan")
            else:
                out.append_text(line)
        return out

    def _figures(self) -> Text:
        d = self.data
        s = d.snapshot
        steps = _int(d.config.value("speculative_num_steps"))
        ndt = _int(d.config.value("speculative_num_draft_tokens"))
        algo = d.config.value("speculative_algorithm")
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        if s is None or not getattr(s, "samples", 0):
            t.append("waiting for the first decode line…\n", "dim")
            t.append(f"algorithm {algo or '?'} · steps {steps or '?'} · draft tokens {ndt or '?'}", "dim")
            return t
        al = s.accept_len
        ngram = str(algo or "").upper() == "NGRAM"
        depth = specmath.chain_depth(algo, steps, ndt)  # NGRAM: draft tokens - 1, whatever steps says
        ceiling = specmath.accept_len_ceiling(depth) if depth else None
        t.append("accept len ", "bold")
        t.append(_f(al.last), self._accept_style(al.last, ceiling))
        if ceiling is not None:
            t.append(f"  ceiling {ceiling}", "bold")
            t.append(f" (draft tokens {ndt})" if ngram else f" (steps {steps}+1)", "dim")
        t.append(f"\n  mean {_f(al.mean)}  p10–p90 {_f(al.p10)}–{_f(al.p90)}  n={s.samples}\n")
        if al.mean is not None and depth:
            alpha = specmath.alpha_from_accept_len(al.mean, depth)
            t.append(f"α≈{alpha:.2f}", "bold")
            t.append("/draft")
            t.append(f"  drafts used {specmath.saturation(al.mean, depth):.0%}")
            rate = specmath.draft_acceptance_rate(al.mean, ndt) if ndt and ndt >= 2 else None
            if rate is not None and ndt != depth + 1:  # a tree: (L−1)/(ndt−1) differs from drafts used
                t.append(f"  (L−1)/(ndt−1) {rate:.2f}")
        else:
            t.append("acceptance: needs draft tokens from the config" if ngram
                     else "acceptance: needs num steps from the config", "dim")
        printed = getattr(s, "accept_rate", None)
        if printed is not None and printed.last is not None:
            t.append(f"  log rate {printed.last:.2f}", "dim")
        t.append("\n")
        tps = s.gen_tokens_per_s
        t.append("gen tok/s ", "bold")
        t.append(_f(tps.last, ".1f"), "bold cyan")
        t.append(f"  mean {_f(tps.mean, '.1f')}")
        self._versus(t, tps.mean if tps.mean is not None else tps.last, s.running_req, d)
        if d.dp_ranks > 1:
            t.append(f"  Σ {d.dp_ranks} DP ranks", "dim")
        t.append("\n")
        t.append(f"running {s.running_req if s.running_req is not None else '–'}")
        t.append(f"  queued {s.queue_req if s.queue_req is not None else '–'}")
        t.append(f"  usage {_f(s.token_usage)}")
        device = (getattr(s, "server_args", None) or {}).get("device") or d.config.device
        if s.graph is not None and str(device or "").lower() == "cpu":
            t.append(f"  cpu graph {'on' if s.graph else 'off'}", "dim")  # the CPU backend's norm: no alarm
        elif s.graph is not None:
            t.append("  graph ")
            t.append("on" if s.graph else "OFF", "green" if s.graph else "bold red")
        t.append("\n")
        width = max(10, self.size.width - 7)
        t.append("accept ", "bold")
        t.append_text(sparkline(d.history.accept_len, width, style="green", low=1.0))
        t.append("\n")
        t.append("tok/s  ", "bold")
        t.append_text(sparkline(d.history.gen_tokens_per_s, width, style="cyan", low=0.0))
        return t

    @staticmethod
    def _versus(t: Text, tps: float | None, running: Any, d: SpecData) -> None:
        """`×0.83 per request vs no speculation at 1 running` (red below 1): per-request decode speed against a
        baseline measured at the same concurrency — the ratio SPEC026 judges (core.rules.baseline_ratio). A
        baseline whose concurrency is not known (`--baseline-tps T`) is a single stream's: compared only
        while one request runs. Otherwise no number: `× needs a baseline at concurrency N` (#23)."""
        from spectui.core.rules import BaselineTps, baseline_ratio

        if d.baseline is None:
            return
        base = d.baseline if getattr(d.baseline, "running", None) else BaselineTps(float(d.baseline), running=1)
        at = base.running
        now = float(running) if isinstance(running, int | float) and running > 0 else None
        ratio = baseline_ratio(tps, now, base) if now is not None else None
        if ratio is None:
            need = f"{now:g}" if now is not None else "of this load (running unknown)"
            t.append(f"  × needs a baseline at concurrency {need}", "dim")
            t.append(f" (have {float(base):.0f} tok/s at {at:g})", "dim")
            return
        ratio = (tps / now) / (float(base) / at)  # per request, like with like
        t.append("  ")
        t.append(f"×{ratio:.2f}", "bold red" if ratio < 1.0 else "bold green")
        t.append(f" per request vs no speculation at {now:g} running")
        if d.baseline_source:
            t.append(f" ({d.baseline_source})", "dim")

    @staticmethod
    def _accept_style(value: float | None, ceiling: int | None) -> str:
        if value is None:
            return "bold"
        if value < 1.3 or (ceiling and ceiling > 2 and value < 0.4 * ceiling):
            return "bold red"
        if value < 2.0:
            return "bold yellow"
        return "bold green"
