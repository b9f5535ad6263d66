"""Bench from the cockpit (`b`): a side dialog with a small form first (requests, concurrency, max tokens,
the workload; defaults filled, nothing is sent until enter / ctrl+s), then it loads the followed server
through ops.bench.run in a worker (the log keeps flowing underneath), shows the live progress and then the
result in place: tok/s, per-request speed, accept length over the window and the speedup against the
known baseline. A bench of a server without speculation becomes the cockpit's baseline.

The workload field takes a bundled set (mixed, chat, code, math, summarise), a JSONL prompts file,
`random:IN:OUT` (bench_serving's random dataset at fixed lengths, with ignore_eos so they hold), or
`multi-turn:TURNS:Q:OUT` (bench_serving's multi-turn workload, generated-shared-prefix with
--gsp-num-turns: `requests` conversations of TURNS turns, each turn a new Q-word question sent with the
conversation so far, earlier answers included, answered with OUT tokens; the first turn also carries a
Q-word system prompt of its own).

Also `cockpit_baseline`: the baseline the cockpit starts with (given, else the last no-spec bench of this
host+model in history)."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

REQUESTS, CONCURRENCY, MAX_TOKENS = 32, 4, 128  # a quick look, not a study: `spectui bench` for that
WORKLOAD = "mixed"
FIELDS = (("requests", "requests", REQUESTS), ("concurrency", "concurrency", CONCURRENCY),
          ("max_tokens", "max tokens", MAX_TOKENS), ("workload", "workload", WORKLOAD))


def parse_form(values: dict[str, str]) -> tuple[dict[str, Any], Any]:
    """The form's fields -> (BenchConfig keyword arguments, PromptSet); ValueError with one line for the
    operator when a field is wrong (nothing is sent then)."""
    from spectui.errors import SpectuiError
    from spectui.load import load_prompts
    from spectui.load.datasets import Dataset, load_dataset

    nums = {}
    for key, label, _ in FIELDS[:3]:
        text = values.get(key, "").strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{label}: a whole number of at least 1, not {text!r}")
        nums[key] = int(text)
    kw: dict[str, Any] = dict(nums)
    spec = values.get("workload", "").strip() or WORKLOAD
    try:
        if spec.startswith("random:"):
            parts = spec.split(":")
            if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
                raise ValueError(f"workload {spec!r}: random:IN:OUT, e.g. random:512:128")
            ds = Dataset("random", nums["requests"], random_input_len=int(parts[1]),
                         random_output_len=int(parts[2]), random_range_ratio=1.0)
            kw["ignore_eos"] = True
            return kw, load_dataset(ds)
        if spec.startswith("multi-turn:"):
            parts = spec.split(":")
            if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
                raise ValueError(f"workload {spec!r}: multi-turn:TURNS:Q:OUT, e.g. multi-turn:3:64:32")
            turns, q, out = (int(p) for p in parts[1:])
            ds = Dataset("generated-shared-prefix", nums["requests"], gsp_num_groups=nums["requests"],
                         gsp_prompts_per_group=1, gsp_system_prompt_len=q, gsp_question_len=q, gsp_output_len=out,
                         gsp_num_turns=turns)
            kw["ignore_eos"] = True
            return kw, load_dataset(ds)
        return kw, load_prompts(spec)
    except SpectuiError as exc:
        raise ValueError(str(exc)) from None


def cockpit_baseline(session: Any, tps: float | None, source: str | None) -> dict[str, Any]:
    """Keyword arguments for Cockpit: the baseline given, else one recorded in bench history."""
    if tps is not None:  # a given --baseline-tps of unknown load is a single stream's (#23)
        from spectui.core.rules import BaselineTps

        given = tps if getattr(tps, "running", None) else BaselineTps(float(tps), running=1)
        return {"baseline_tps": given, "baseline_source": source or "given"}
    if getattr(session, "host", None) is None or getattr(session, "replay", False):
        return {}
    from spectui.ops.bench.baseline import known_baseline

    host = getattr(session.host, "name", None) or session.label
    try:
        found = known_baseline(host, _model_path(session.launch))
    except Exception:  # history is a convenience: a damaged file never stops the cockpit
        return {}
    return {"baseline_tps": found, "baseline_source": "history"} if found is not None else {}


def _model_path(launch: Any) -> str | None:
    if launch is None:
        return None
    from spectui.core.launch import flag_values

    try:
        return flag_values(launch).get("--model-path") or None
    except Exception:  # an odd command only costs the history lookup
        return None


def _f(x: Any, spec: str = ".1f") -> str:
    return "–" if not isinstance(x, int | float) else format(x, spec)


def result_text(out: dict[str, Any]) -> Text:
    t = Text(no_wrap=False)
    wl, req = out["workload"], out["requests"]
    turns = wl.get("num_turns") or 1
    convs = f" ({wl.get('requests')} conversations of {turns} turns)" if turns > 1 else ""
    t.append(f"{req['ok']} ok, {req['failed']} failed{convs} · concurrency {wl.get('concurrency') or 'unlimited'} · "
             f"max_tokens {wl.get('max_tokens')} · window {_f(out.get('duration_s'), '.2f')} s\n", "dim")
    t.append("output tok/s ", "bold")
    t.append(_f(out.get("output_tokens_per_s")), "bold cyan")
    per = out.get("per_request_tokens_per_s") or {}
    t.append(f"   per request {_f(per.get('mean'))} (p50 {_f(per.get('p50'))})\n")
    t.append(f"TTFT p50 {_f((out.get('ttft_ms') or {}).get('p50'))} ms   TPOT p50 "
             f"{_f((out.get('tpot_ms') or {}).get('p50'), '.2f')} ms\n")
    spec = out.get("spec")
    if spec:
        t.append("accept len ", "bold")
        t.append(_f(spec.get("accept_len"), ".2f"), "bold green")
        t.append(f" over the window ({spec.get('source') or 'no source'})\n")
    else:
        t.append("speculation off: this is the no-speculation baseline\n", "bold")
    base, up = out.get("baseline"), out.get("speedup") or {}
    if base:
        agg = up.get("output_tokens_per_s")
        t.append("speedup ", "bold")
        t.append(f"×{_f(agg, '.2f')}", "bold red" if isinstance(agg, float) and agg < 1 else "bold green")
        t.append(f" aggregate, ×{_f(up.get('per_request_tokens_per_s'), '.2f')} per request vs "
                 f"{_f(base.get('output_tokens_per_s'))} tok/s without speculation ({base.get('source')})\n")
    elif spec:
        t.append("no baseline known: `spectui bench --baseline` measures one\n", "dim")
    t.append(f"recorded as {out.get('history_id')}", "dim")
    return t


class BenchScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss", "Close"), Binding("ctrl+s", "start", "Run")]
    DEFAULT_CSS = """
    BenchScreen { align: right top; background: $background 30%; }
    BenchScreen > Vertical { width: 72; height: auto; max-height: 28; border: round $accent;
                             background: $panel; padding: 0 1; }
    BenchScreen .field { height: 3; }
    BenchScreen .field Label { width: 14; padding: 1 0; }
    BenchScreen .field Input { width: 1fr; }
    """

    def __init__(self, session: Any, cockpit: Any) -> None:
        super().__init__()
        self.session, self.cockpit = session, cockpit
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.started = False
        self.turns = 1
        self._last_paint = 0.0

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"bench · {self.session.label}", classes="title")
            for key, label, default in FIELDS:
                with Horizontal(classes="field"):
                    yield Label(label)
                    yield Input(str(default), id=f"bench-{key}")
            yield Static(Text("workload: mixed, chat, code, math, summarise, a JSONL file, random:IN:OUT or "
                              "multi-turn:TURNS:Q:OUT", style="dim"), id="bench-hint")
            yield Static(Text("enter / ctrl+s run · esc close", style="dim"), id="bench-progress")
            yield Static("", id="bench-result")

    def on_mount(self) -> None:
        if self.session.host is None or getattr(self.session, "replay", False):
            self._say("no live server here (a recorded log): nothing to bench")
            for field in self.query(Input):
                field.disabled = True
            return
        self.query_one("#bench-requests", Input).focus()

    def form_values(self) -> dict[str, str]:
        return {key: self.query_one(f"#bench-{key}", Input).value for key, _, _ in FIELDS}

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    def action_start(self) -> None:
        if self.started or self.session.host is None or getattr(self.session, "replay", False):
            return
        try:
            kw, prompts = parse_form(self.form_values())
        except ValueError as exc:
            self._say(Text(str(exc), style="bold red"))
            return
        self.started, self.turns = True, prompts.turns
        for field in self.query(Input):
            field.disabled = True
        self._say("starting…")
        self.run_bench(kw, prompts)

    def _say(self, text: str | Text) -> None:
        self.query_one("#bench-progress", Static).update(text)

    def _phase(self, name: str) -> None:
        self._say(f"{name}…")

    def _progress(self, p: Any) -> None:
        now = time.monotonic()
        if now - self._last_paint < 0.1:
            return
        self._last_paint = now
        total = p.total if p.total is not None else "?"
        self._say(f"{p.done}/{total} requests{' (turns)' if self.turns > 1 else ''} · {_f(p.tokens_per_s)} tok/s · in flight {p.in_flight} · "
                  f"failed {p.failed}")

    @work(exclusive=True, group="bench")
    async def run_bench(self, kw: dict[str, Any], prompts: Any) -> None:
        from spectui.errors import SpectuiError
        from spectui.load import BenchConfig, ServerUnreachableError
        from spectui.ops.bench import run as bench

        s, c = self.session, self.cockpit
        given = c.baseline if c.baseline_source in ("given", "simulator") else None
        port = s.server_port or getattr(s.server, "port", None)
        plan = bench.BenchPlan(BenchConfig("http://127.0.0.1", **kw), prompts,
                               pid=None if port else s.pid, server_port=port,
                               baseline_tps=float(given) if given is not None else None)
        try:
            out = await bench.run(s.host, plan, on_progress=self._progress, on_phase=self._phase)
        except (SpectuiError, ServerUnreachableError, OSError) as exc:
            self.error = str(exc)
            self._say(Text(f"bench failed: {exc}", style="bold red"))
            return
        self.result = out
        self._say(Text("done", style="bold green"))
        self.query_one("#bench-result", Static).update(result_text(out))
        if out.get("spec") is None and out.get("output_tokens_per_s"):
            from spectui.core.rules import BaselineTps

            c.set_baseline(BaselineTps(out["output_tokens_per_s"], out["workload"].get("concurrency")), "measured")
