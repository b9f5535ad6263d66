"""`spectui bench TARGET`: load the server's OpenAI-compatible API and measure tok/s, TTFT/TPOT/ITL and the
accept length over the measured window, against a baseline without speculation (CONTRACTS.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "spectui bench"


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `spectui sweep` shares: the target, the load, the baseline, --json, SSH."""
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("target", metavar="TARGET", help="where the server runs: local or [user@]host[:port]")
    parser.add_argument("--pid", type=int, help="the server's pid (when the host runs several)")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server's HTTP port on TARGET (default: from its command line)")
    parser.add_argument("--concurrency", "--max-concurrency", dest="concurrency", type=int, default=4, metavar="C",
                        help="requests in flight at most (default 4; 0: no limit)")
    parser.add_argument("--rate", "--request-rate", dest="rate", type=float, metavar="R",
                        help="Poisson arrivals, R requests/s (default: all at once)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--requests", "--num-prompts", dest="requests", type=int, metavar="N",
                      help="measured requests (default 64)")
    size.add_argument("--duration", type=float, metavar="S", help="start requests for S seconds instead")
    parser.add_argument("--warmup", "--warmup-requests", dest="warmup", type=int, default=1, metavar="N",
                        help="warm-up requests before the window (default 1)")
    parser.add_argument("--max-tokens", type=int, default=256, metavar="N", help="max_tokens per request (default 256)")
    parser.add_argument("--temperature", type=float, default=0.0, metavar="T", help="sampling temperature (default 0)")
    parser.add_argument("--prompts", default="mixed", metavar="NAME|FILE",
                        help="chat, code, math, summarise, mixed (default) or a JSONL file "
                             '({"prompt": ...} or {"messages": [...]} per line)')
    parser.add_argument("--api-key", metavar="KEY", help="the server's --api-key, if it has one")
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--baseline", action="store_true",
                      help="measure the baseline: relaunch the same command without its --speculative-* flags, "
                           "run the same workload, then restore the speculative command (checked healthy)")
    base.add_argument("--baseline-tps", type=float, metavar="T",
                      help="output tok/s of the same workload without speculation (for the speedup)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_ssh_options(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.bench.opts import add_bench_only_arguments

    add_common_arguments(parser)
    add_bench_only_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError
    from spectui.load import NotOpenAIServerError, ServerUnreachableError

    try:
        return asyncio.run(_run(args))
    except (ServerUnreachableError, NotOpenAIServerError) as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return 2  # the port given does not serve an OpenAI API: bad input
    except SpectuiError as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # a second Ctrl-C (or one before the loop could catch it)
        print(f"{NAME}: interrupted; nothing recorded", file=sys.stderr)
        return 130


def _plan(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from spectui.commands.bench.opts import workload
    from spectui.errors import UsageError
    from spectui.load import BenchConfig
    from spectui.ops.bench.run import BenchPlan

    if args.baseline_tps is not None and not args.baseline_tps > 0:
        raise UsageError("--baseline-tps must be > 0 tok/s")
    if args.server_port is not None and not 0 < args.server_port < 65536:
        raise UsageError(f"--server-port {args.server_port} is out of range (1-65535)")
    if args.output_details and not (args.output_file or args.json):
        raise UsageError("--output-details goes with --output-file FILE (or --json)")
    extra, prompts, info = workload(args)  # PromptFileError (exit 2) names the file and the line
    config = BenchConfig("http://127.0.0.1", requests=args.requests, duration_s=args.duration,
                         concurrency=args.concurrency or None, rate=args.rate, warmup=args.warmup,
                         max_tokens=args.max_tokens, temperature=args.temperature, api_key=args.api_key, **extra)
    config.validate()
    return BenchPlan(config, prompts, pid=args.pid, server_port=args.server_port, baseline_tps=args.baseline_tps,
                     details=args.output_details), info


async def _run(args: argparse.Namespace) -> int:
    from spectui.commands.bench.opts import confirm_baseline, write_output
    from spectui.errors import UsageError
    from spectui.sources.target import open_host, parse_target

    target = parse_target(args.target)
    if target.kind not in ("local", "ssh"):
        raise UsageError(f"bench needs a host, not a log file: use local or [user@]host[:port] (got {args.target!r})")
    plan, info = _plan(args)
    confirm_baseline(args)  # no terminal and no --yes: refused before anything runs
    host = open_host(target, args, read_only=not args.baseline)  # --baseline relaunches the server
    bar = None if args.json else _Bar()
    try:
        await host.connect()
        if args.baseline and not args.yes and not await _confirmed(host, plan):
            print(f"{NAME}: not confirmed; nothing was changed", file=sys.stderr)
            return 1
        if bar is not None:
            bar.start()
        if args.baseline:
            out = await _with_baseline(host, plan, bar)
        else:
            out = await _interruptible(host, plan, bar)
    finally:
        if bar is not None:
            bar.stop()
        await host.close()
    if args.output_file:
        write_output(args.output_file, out, info)
    if args.json:
        print(json.dumps(out))
    else:
        _table(out)
    reqs = out["requests"]
    if out.get("interrupted"):
        print(f"{NAME}: interrupted: {reqs['ok'] + reqs['failed']} requests completed and are measured "
              f"({reqs.get('cancelled', 0)} in flight cancelled); recorded as {out.get('history_id')}", file=sys.stderr)
        return 130
    if reqs["failed"]:
        print(f"{NAME}: {reqs['failed']} of {reqs['ok'] + reqs['failed']} requests failed "
              f"({', '.join(f'{k} x{v}' for k, v in reqs['errors'].items())}); see the server log", file=sys.stderr)
        return 1
    if not reqs["ok"]:
        print(f"{NAME}: no request was measured", file=sys.stderr)
        return 1
    return 0


async def _confirmed(host: Any, plan: Any) -> bool:
    from spectui.commands.bench.opts import ask
    from spectui.ops.bench import baseline as bench_baseline

    return ask(await bench_baseline.preview(host, plan))


async def _interruptible(host: Any, plan: Any, bar: Any) -> dict[str, Any]:
    """bench.run where the first Ctrl-C stops the run and keeps what completed (measured, recorded); a
    second one abandons it."""
    import asyncio
    import contextlib
    import signal

    from spectui.ops.bench import run as bench

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    stop = asyncio.Event()

    def on_sigint() -> None:
        if not stop.is_set():
            print(f"{NAME}: interrupted: stopping; what completed is measured and recorded (Ctrl-C again "
                  "to abandon)", file=sys.stderr)
            stop.set()
        elif task is not None:
            task.cancel()

    installed = False
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    try:
        return await bench.run(host, plan, on_progress=bar.update if bar else None,
                               on_phase=bar.phase if bar else None, stop=stop)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


async def _with_baseline(host: Any, plan: Any, bar: Any) -> dict[str, Any]:
    """bench_baseline.run with Ctrl-C handled here: the first cancels the measuring (the relaunch in progress
    finishes, then the speculative command is restored); later ones only say so."""
    import asyncio
    import contextlib
    import signal

    from spectui.ops.bench import baseline as bench_baseline

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    presses = [0]

    def on_sigint() -> None:
        presses[0] += 1
        if presses[0] == 1 and task is not None:
            print(f"{NAME}: interrupted: restoring the speculative command first (this takes a relaunch)",
                  file=sys.stderr)
            task.cancel()
        else:
            print(f"{NAME}: still restoring the speculative command; wait for it", file=sys.stderr)

    def step(text: str) -> None:
        if bar is not None:
            bar.progress.console.print(text, markup=False, highlight=False)

    installed = False
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    try:
        return await bench_baseline.run(host, plan, on_progress=bar.update if bar else None,
                                        on_phase=bar.phase if bar else None, on_step=step)
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


class _Bar:
    """A rich progress bar on stderr with the live figures."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[live]}"),
                                 console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("connect", total=None, live="")

    def start(self) -> None:
        self.progress.start()

    def stop(self) -> None:
        self.progress.stop()

    def phase(self, name: str) -> None:
        self.progress.update(self.task, description=name, completed=0, total=None, live="")

    def update(self, p: Any) -> None:
        total = p.total
        if total is None and p.duration_s:
            total = None
        live = (f"{p.tokens_per_s or 0:7.1f} tok/s  now {p.recent_tokens_per_s or 0:7.1f}  "
                f"in flight {p.in_flight}  failed {p.failed}")
        self.progress.update(self.task, completed=p.done, total=total, live=live)


def _fmt(x: Any, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def _table(out: dict[str, Any]) -> None:
    from rich.table import Table

    from spectui.commands.console import cli_console

    srv, wl, spec = out["server"], out["workload"], out.get("spec")
    algo = (srv.get("speculative") or {}).get("speculative_algorithm") or "off"
    console = cli_console()
    run = out.get("baseline_run")
    who = f"server pid {_fmt(srv.get('pid'), '')}"
    if run:  # the measured server was stopped by the baseline relaunch: say which runs now
        who = (f"measured pid {_fmt(srv.get('pid'), '')} (stopped for the baseline; the speculative command "
               f"runs again as pid {_fmt(srv.get('now_pid'), '')})")
    console.print(f"{who}  port {srv.get('port')}  SGLang {srv.get('sglang_version') or '?'}  speculation "
                  f"{algo}  model {wl.get('model')}", markup=False)
    console.print(f"workload {wl['prompts']}: {wl['requests'] or '-'} requests, concurrency "
                  f"{wl['concurrency'] or 'unlimited'}, rate {wl['rate'] or 'all at once'}, max_tokens "
                  f"{wl['max_tokens']}, temperature {wl['temperature']}", markup=False)
    cols = ("mean", "p50", "p90", "p95", "p99", "std", "max")
    t = Table("metric", *cols)
    for key, label in (("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms"), ("itl_ms", "ITL ms (per token)"),
                       ("chunk_gap_ms", "chunk gap ms"), ("e2e_ms", "E2E ms")):
        d = out.get(key) or {}
        t.add_row(label, *(_fmt(d.get(k)) for k in cols))
    per = out["per_request_tokens_per_s"]
    t.add_row("per-request tok/s", _fmt(per.get("mean")), _fmt(per.get("p50")), *[""] * (len(cols) - 2))
    console.print(t)
    r = out["requests"]
    console.print(f"requests ok {r['ok']}  failed {r['failed']}  window {out['duration_s']:.2f} s  "
                  f"{_fmt(out.get('requests_per_s'), '.2f')} req/s  mean concurrency "
                  f"{_fmt(out.get('concurrency'), '.2f')}", markup=False)
    console.print(f"output {out['output_tokens']} tokens  {_fmt(out['output_tokens_per_s'])} tok/s   input "
                  f"{_fmt(out.get('input_tokens'), '')} tokens  {_fmt(out.get('input_tokens_per_s'))} tok/s   "
                  f"total {_fmt(out.get('total_tokens_per_s'))} tok/s", markup=False)
    good = out.get("goodput")
    if good:
        slos = " ".join(f"{k}:{v:g}" for k, v in good["goodput_slos_ms"].items())
        att = good.get("slo_attainment")
        console.print(f"goodput ({slos} ms) {_fmt(good.get('request_goodput'), '.2f')} req/s, SLO attainment "
                      f"{_fmt(None if att is None else att * 100, '.1f')} %", markup=False)
    if spec:
        line = f"accept len {_fmt(spec.get('accept_len'), '.3f')} (source {spec.get('source') or 'none'})"
        if spec.get("accept_rate") is not None:
            line += f"  accept rate {spec['accept_rate']:.3f}"
        if spec.get("identities_ok") is False:
            line += "  per-request identities VIOLATED: " + "; ".join(spec.get("violations", [])[:2])
        console.print(line, markup=False)
    base, up = out.get("baseline"), out.get("speedup")
    if base and up:
        per_base = (base.get("per_request_tokens_per_s") or {}).get("mean")
        console.print(f"baseline ({base['source']}) {_fmt(base.get('output_tokens_per_s'))} tok/s, per request "
                      f"{_fmt(per_base)}  ->  speedup x{_fmt(up.get('output_tokens_per_s'), '.2f')} aggregate, "
                      f"x{_fmt(up.get('per_request_tokens_per_s'), '.2f')} per request", markup=False)
    if run and run.get("baseline"):
        b = run["baseline"]
        side = Table("at concurrency " + str(wl["concurrency"] or "unlimited"), "speculative", "no speculation",
                     "speedup")
        side.add_row("output tok/s", _fmt(out["output_tokens_per_s"]), _fmt(b.get("output_tokens_per_s")),
                     "x" + _fmt((up or {}).get("output_tokens_per_s"), ".2f"))
        side.add_row("per-request tok/s (mean)", _fmt(per.get("mean")),
                     _fmt((b.get("per_request_tokens_per_s") or {}).get("mean")),
                     "x" + _fmt((up or {}).get("per_request_tokens_per_s"), ".2f"))
        side.add_row("TPOT ms (p50)", _fmt(out["tpot_ms"].get("p50")), _fmt((b.get("tpot_ms") or {}).get("p50")), "")
        console.print(side)
    if run:
        r = run["restored"]
        console.print(f"baseline server pid {_fmt(run.get('baseline_pid'), '')} (unset {', '.join(run['unset'])}); "
                      f"speculative command restored as pid {_fmt(r.get('pid'), '')}, healthy "
                      f"{r.get('healthy')}, speculative_algorithm {r.get('speculative_algorithm')}", markup=False)
    console.print(f"history id {out['history_id']}", markup=False)
