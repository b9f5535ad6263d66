"""`spectui sweep`'s human output: the plan with its estimate, the results table, the Pareto front, the best
pick and a terminal plot (plotext) of accept length and speed against depth; the CSV file."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from typing import Any

from spectui.ops.sweep.plan import estimate_for as estimate_for  # the plan's duration (the cockpit's too)
from spectui.ops.sweep.results import accept_len, aggregate, depth_of, per_request
from spectui.ops.sweep.results import eff_text as _eff_text
from spectui.ops.sweep.results import set_text as _set_text


def _fmt(x: Any, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def dry_run_json(plan: Any, est: Mapping[str, Any]) -> dict[str, Any]:
    return {"configs": [c.to_json() for c in plan.configs], "launches": 0, "planned_launches": len(plan.to_launch),
            "best": None, "pareto": [], "applied": None, "baseline": None, "estimate": dict(est),
            "sglang_version": plan.version, "dry_run": True}


def print_plan(plan: Any, est: Mapping[str, Any], *, stderr: bool = False) -> None:
    from rich.table import Table

    from spectui.commands.console import cli_console

    console = cli_console(stderr=stderr)
    console.print(f"server pid {plan.server.pid} on {plan.host_name}; SGLang {plan.version} ({plan.version_note})",
                  markup=False)
    t = Table("#", "set", "effective steps/topk/ndt", "plan", title="sweep plan")
    for c in plan.configs:
        what = {"pending": "launch", "duplicate": f"duplicate of #{c.same_as}", "skipped": f"skipped: {(c.reason or '').split(' (')[0]}"}
        shown = {k: "-" if v is None else v for k, v in c.set.items()}
        t.add_row(str(c.index), _set_text(shown), _eff_text(c.effective), what.get(c.status, c.status))
    console.print(t)
    base = " (+2 for the --baseline: without speculation, then back)" if est.get("baseline") else ""
    console.print(f"{len(plan.to_launch)} launches (+1 to put the command back){base}; about {est['total_s'] / 60:.1f} "
                  f"min: {est['per_config_s']:.0f} s each (start-up {est['startup_s']:.0f} s from "
                  f"{est['startup_from']}, bench {est['bench_s']:.0f} s)", markup=False)


def rows(out: Mapping[str, Any]) -> list[dict[str, Any]]:
    table = []
    for i, c in enumerate(out["configs"]):
        b = c.get("bench") or {}
        tpot = b.get("tpot_ms") or {}
        up = (b.get("speedup") or {}).get("output_tokens_per_s")
        status = c["status"]
        if status == "duplicate":
            status = f"duplicate of #{c.get('same_as')}"
        elif c.get("reason") and status != "ok":
            status = f"{status}: {c['reason'].split(':')[0] if status == 'failed' else 'SGLang refuses'}"
        table.append({"config": i, "set": _set_text(c["set"]), "effective": _eff_text(c.get("effective")),
                      "accept_len": accept_len(c), "per_request_tps": per_request(c), "output_tps": aggregate(c),
                      "tpot_p50_ms": tpot.get("p50"), "tpot_p99_ms": tpot.get("p99"), "x_baseline": up,
                      "status": status})
    return table


def write_csv(path: str, out: Mapping[str, Any]) -> None:
    from spectui.errors import UsageError

    data = rows(out)
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(data[0]) if data else ["config"])
            w.writeheader()
            w.writerows(data)
    except OSError as exc:
        raise UsageError(f"--csv {path}: cannot write it ({exc.strerror or exc})") from None


def print_results(out: Mapping[str, Any], *, plot: bool = True) -> None:
    from rich.table import Table

    from spectui.commands.console import cli_console

    console = cli_console()
    t = Table("#", "set", "eff s/t/d", "accept len", "per-req tok/s", "tok/s", "TPOT p50", "TPOT p99", "x base",
              "status / cause", title="sweep results")
    best, front = out.get("best"), set(out.get("pareto") or [])
    for r in rows(out):
        mark = ("*" if r["config"] == best else "") + ("P" if r["config"] in front else "")
        t.add_row(f"{r['config']}{mark}", r["set"], r["effective"], _fmt(r["accept_len"], ".2f"),
                  _fmt(r["per_request_tps"]), _fmt(r["output_tps"]), _fmt(r["tpot_p50_ms"], ".2f"),
                  _fmt(r["tpot_p99_ms"], ".2f"), _fmt(r["x_baseline"], ".2f"), r["status"])
    console.print(t)
    for i, c in enumerate(out["configs"]):
        if c["status"] in ("failed", "skipped") and c.get("reason"):
            console.print(f"#{i} {c['status']}: {c['reason']}", markup=False)
    console.print("* best   P Pareto front (per-request speed vs aggregate tok/s): "
                  + (", ".join(f"#{i}" for i in out.get("pareto") or []) or "none"), markup=False)
    console.print(f"best: {out.get('why')}", markup=False)
    base = out.get("baseline") or {}
    if base.get("source") == "measured":
        orig = base.get("original") or {}
        up = (orig.get("speedup") or {}).get("output_tokens_per_s")
        console.print(f"baseline (measured, no speculation): {_fmt(base.get('output_tokens_per_s'))} tok/s; the "
                      f"original command: {_fmt(orig.get('output_tokens_per_s'))} tok/s, x{_fmt(up, '.2f')}",
                      markup=False)
    elif out.get("baseline_error"):
        console.print(f"baseline: {out['baseline_error']}", markup=False)
    restore = out.get("restore") or {}
    state = "healthy" if restore.get("healthy") else "NOT healthy"
    console.print(f"applied: {out.get('applied')} command, pid {restore.get('pid')} {state}"
                  + ("  (interrupted)" if out.get("interrupted") else "")
                  + f"; {out.get('launches')} launches; journal {out.get('journal')}", markup=False)
    if plot:
        text = depth_plot(out)
        if text:
            print(text)


def depth_plot(out: Mapping[str, Any], width: int = 90, height: int = 18) -> str | None:
    """Accept length and per-request speed against depth (speculative_num_steps), ok configs only."""
    import plotext as plt

    pts = sorted((depth_of(c), accept_len(c), per_request(c)) for c in out["configs"]
                 if c.get("status") == "ok" and depth_of(c) is not None and per_request(c) is not None)
    if not pts:
        return None
    xs = [p[0] for p in pts]
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    if any(p[1] is not None for p in pts):
        plt.scatter(xs, [p[1] or 0.0 for p in pts], label="accept len", marker="a")
    plt.scatter(xs, [p[2] for p in pts], label="per-request tok/s", marker="s", yside="right")
    plt.title("accept length and speed against depth")
    plt.xlabel("speculative-num-steps")
    return re.sub(r"\x1b\[[0-9;]*m", "", str(plt.build())).rstrip()
