"""`spectui advise [TARGET]`: the chain depth to run, from what was observed (CONTRACTS.md).

Observations (steps, accept len[, per-request tok/s]) come from `--observed STEPS:ACCEPT_LEN[:TPS]`, from a
finished sweep's journal (`--sweep FILE`), from TARGET's bench history (bench.jsonl: steps, accept len and
per-request speed at the bench's concurrency) and from TARGET's live log (the running server's resolved steps
and the mean accept len of its recent Decode lines). The cost of a round is known only where a speed was
measured (bench or sweep): then `tokens_per_s` appears per row and the advisor can say that every depth is
slower than no speculation (an MoE target at small batch, a high-concurrency run).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "spectui advise"
LOG_TAIL = 1 << 19


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("target", metavar="TARGET", nargs="?",
                        help="local or [user@]host[:port]: its bench history and live log add observations")
    parser.add_argument("--observed", action="append", default=[], metavar="STEPS:ACCEPT_LEN[:TPS]",
                        help="an observed depth, e.g. --observed 3:2.8 (TPS: per-request tok/s there; repeatable)")
    parser.add_argument("--sweep", dest="sweeps", action="append", default=[], metavar="FILE",
                        help="a sweep journal (JSONL): its measured configs are observations")
    parser.add_argument("--topk", type=int, default=1, metavar="K", help="the draft tree's topk (default 1: a chain)")
    parser.add_argument("--max-steps", type=int, default=10, metavar="N", help="predict steps 1..N (default 10)")
    parser.add_argument("--baseline-tps", type=float, metavar="T",
                        help="per-request tok/s without speculation at the same concurrency")
    parser.add_argument("--pid", type=int, help="the server's pid on TARGET (when it runs several)")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server listening on port N (when the host runs several)")
    parser.add_argument("--json", action="store_true", help="print the advise contract's JSON object")
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    from spectui.errors import SpectuiError

    try:
        return _run(args)
    except SpectuiError as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return exc.exit_code


def parse_observed(text: str) -> Any:
    from spectui.core.specdec import Observed
    from spectui.errors import UsageError

    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError
        steps, length = int(parts[0]), float(parts[1])
        tps = float(parts[2]) if len(parts) == 3 else None
    except ValueError:
        raise UsageError(f"--observed {text!r}: write STEPS:ACCEPT_LEN (e.g. 3:2.8) or STEPS:ACCEPT_LEN:TPS") from None
    return Observed(steps, length, tps)


def from_bench(res: dict[str, Any]) -> tuple[Any, int | None, float | None] | None:
    """(Observed, concurrency, baseline per-request tok/s) from one bench result of a topk-1 chain."""
    from spectui.core.specdec import Observed

    spec = (res.get("server") or {}).get("speculative") or {}
    steps, topk = spec.get("speculative_num_steps"), spec.get("speculative_eagle_topk")
    length = (res.get("spec") or {}).get("accept_len")
    if not isinstance(steps, int) or steps < 1 or topk not in (1, None) or not isinstance(length, int | float):
        return None
    tps = (res.get("per_request_tokens_per_s") or {}).get("mean")
    base = ((res.get("baseline") or {}).get("per_request_tokens_per_s") or {}).get("mean")
    return Observed(steps, min(float(length), steps + 1.0), tps or None), (res.get("workload") or {}).get(
        "concurrency"), base


def from_sweep(path: str) -> list[tuple[Any, int | None, float | None]]:
    from spectui.ops.sweep.journal import Journal

    out = []
    for entry in Journal.read(path).done.values():
        if entry.get("status") == "ok" and isinstance(entry.get("bench"), dict):
            got = from_bench(entry["bench"])
            if got:
                out.append(got)
    return out


def same_server(line: dict[str, Any], port: int | None, draft: str | None) -> bool:
    """A bench.jsonl line measured this server: its port (a host runs several), and its draft when both
    are recorded (the same port may later serve another draft)."""
    if port is not None and line.get("port") != port:
        return False
    return not (draft and line.get("draft") and line.get("draft") != draft)


def from_history(host_name: str, port: int | None = None, draft: str | None = None
                 ) -> list[tuple[Any, int | None, float | None]]:
    """The host's bench results (of the server on `port` with `draft`, when given) as observations."""
    from spectui.ops.bench.history import bench_records

    out = []
    for obj in bench_records(host=host_name):
        if same_server(obj, port, draft):
            got = from_bench(obj["result"])
            if got:
                out.append(got)
    return out


async def from_live(host: Any, server: Any) -> tuple[Any, str, int | None] | None:
    """The running server's steps (its command resolved), the mean accept len of its log's last lines and,
    when every one of them ran the same number of requests, their per-request tok/s and that count."""
    from spectui.core.log import DecodeSample, LogParser
    from spectui.core.specdec import Observed
    from spectui.ops.bench.run import speculative_config

    spec = speculative_config(list(server.argv), dict(server.env), None, {}) or {}
    steps = spec.get("speculative_num_steps")
    if not isinstance(steps, int) or steps < 1 or spec.get("speculative_eagle_topk") not in (1, None) \
            or not server.log_path:
        return None
    st = await host.stat(server.log_path)
    size = st.size if st else 0
    data = await host.read_range(server.log_path, max(0, size - LOG_TAIL), LOG_TAIL)
    samples = [r for r in LogParser().feed_bytes(data) if isinstance(r, DecodeSample) and r.accept_len]
    if not samples:
        return None
    recent = samples[-20:]
    length = min(sum(r.accept_len for r in recent) / len(recent), steps + 1.0)  # type: ignore[misc]
    # The log's speed too, per request (what the rules judge on the same lines), when the load held steady.
    runs = {r.running_req for r in recent}
    tps = [r.gen_tokens_per_s for r in recent if r.gen_tokens_per_s]
    run = runs.pop() if len(runs) == 1 else None
    per_request = sum(tps) / len(tps) / run if tps and isinstance(run, int) and run > 0 else None
    note = f"live log {server.log_path}" + (f" ({run} running)" if per_request else "")
    return Observed(steps, length, per_request), note, run if per_request else None


def _gather(args: argparse.Namespace) -> tuple[list[Any], int | None, float | None, list[str]]:
    import asyncio

    from spectui.errors import UsageError

    obs = [parse_observed(t) for t in args.observed]
    notes = [f"--observed {t}" for t in args.observed]
    measured: list[tuple[Any, int | None, float | None]] = []
    live = None
    for path in args.sweeps:
        got = from_sweep(path)
        measured += got
        notes.append(f"sweep {path}: {len(got)} measured configs")
    if args.target:
        from spectui.sources.target import parse_target

        target = parse_target(args.target)
        if target.kind not in ("local", "ssh"):
            raise UsageError(f"advise needs a host as TARGET: local or [user@]host[:port] (got {args.target!r})")
        got, live, whose = asyncio.run(_target(target, args))
        measured += got
        notes.append(f"bench history of {args.target} ({whose}): {len(got)} results")
        if live:
            notes.append(live[1])
            args.running_steps = live[0].steps  # the running config: always a predicted row
    # Speeds only count at one concurrency: the most measured one (else the live log's).
    conc = [c for _, c, _ in measured if c is not None]
    running = max(set(conc), key=conc.count) if conc else (live[2] if live else None)
    if live:
        o = live[0]
        obs.append(o if live[2] == running else type(o)(o.steps, o.accept_len, None))
    base = args.baseline_tps
    source = "given" if base else None
    for o, c, b in measured:
        same = c == running
        obs.append(o if same else type(o)(o.steps, o.accept_len, None))
        if not base and same and b:
            base, source = b, "measured"  # a bench --baseline / sweep --baseline of this server
    args.baseline_source = source
    return obs, running, base, notes


async def _target(target: Any, args: argparse.Namespace) -> tuple[list[Any], tuple[Any, str, int | None] | None, str]:
    """TARGET's server's bench history, its live observation (None when no server or no Decode line), and
    whose history that is. Without a server found, every bench result of the host counts (said so)."""
    from spectui.errors import SpectuiError
    from spectui.ops.bench.run import draft_path
    from spectui.sources.target import open_host, pick_one

    host = open_host(target, args, read_only=True)
    server = live = None
    try:
        await host.connect()
        server = await pick_one(host, args.pid, args.server_port)
        live = await from_live(host, server)
    except SpectuiError as exc:
        print(f"{NAME}: no live observation from {args.target}: {exc}", file=sys.stderr)
    finally:
        await host.close()
    if server is None:
        return from_history(host.name), None, "every server on it: none found to match"
    draft = draft_path(server.argv)
    whose = f"pid {server.pid}'s port {server.port}" + (f", draft {draft}" if draft else "")
    return from_history(host.name, server.port, draft), live, whose


def _run(args: argparse.Namespace) -> int:
    from spectui.core.specdec import advise
    from spectui.errors import UsageError

    if args.topk != 1:
        raise UsageError("--topk: the advisor models chains only (topk 1); trees are not predicted yet")
    obs, running, base, notes = _gather(args)
    if not obs:
        raise UsageError("no observation: give --observed STEPS:ACCEPT_LEN, --sweep FILE or a TARGET with a "
                         "bench history or a live log")
    adv = advise(obs, baseline_per_request_tps=base, running=running, max_steps=args.max_steps,
                 running_steps=getattr(args, "running_steps", None),
                 baseline_source=getattr(args, "baseline_source", None))
    if args.json:
        print(json.dumps(adv.to_json()))
        return 0
    _human(adv, notes, running)
    return 0


def _human(adv: Any, notes: list[str], running: int | None) -> None:
    from rich.table import Table

    from spectui.commands.console import cli_console

    console = cli_console()
    m = adv.model
    console.print(f"model: a1 {m.a1:.3f}, r {m.r:.3f}{' (prior)' if m.prior else ''}; observed "
                  + ", ".join(f"steps {k}: {v:.2f}" for k, v in m.observations)
                  + (f"; concurrency {running}" if running else ""), markup=False)
    for n in notes:
        console.print(f"  from {n}", markup=False)
    base = adv.to_json()["baseline"]
    console.print(f"speedup: x no speculation per request, against the {base['source']} baseline"
                  + (f" ({base['tokens_per_s']:.1f} tok/s)" if base["tokens_per_s"] and base["source"] != "modelled"
                     else " (no baseline measured: the cost model's)"), markup=False)
    t = Table("steps", "accept len", "range", "tok/s per request", "speedup", "measured")
    seen = {k for k, _ in m.observations}
    for p in adv.predicted:
        mark = " (running)" if p.running else " (observed)" if p.steps in seen else ""
        sp = "-" if p.speedup is None else f"×{p.speedup:.2f} [{p.speedup_low:.2f}-{p.speedup_high:.2f}]"
        t.add_row(f"{p.steps}{mark}", f"{p.accept_len:.2f}", f"{p.low:.2f}-{p.high:.2f}",
                  "-" if p.tokens_per_s is None else f"{p.tokens_per_s:.1f}", sp,
                  "-" if p.measured_speedup is None else f"×{p.measured_speedup:.2f}")
    console.print(t)
    for line in adv.measurement_wins:
        console.print(f"measured and predicted disagree: {line}", markup=False)
    r = adv.recommend
    head = "turn speculation off" if r.off else f"steps {r.steps}, topk {r.topk}, draft tokens {r.num_draft_tokens}"
    console.print(f"recommend: {head} — {r.why}", markup=False)
    if adv.next_to_measure is not None:
        console.print(f"next to measure: steps {adv.next_to_measure}", markup=False)
