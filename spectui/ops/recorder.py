"""Recording an incident bundle from a live server (`spectui record`, `report TARGET`, the cockpit's `x`).

`collect(host, ...)` finds the server (or takes a log path), samples /server_info, /metrics and the GPUs
over a window, then reads the log of the current launch and runs the same pipeline and rules as `check`
over it. It returns `BundleParts`; `spectui.bundle.write_bundle` cuts the log and masks every secret.
Nothing here changes the server: every host call is a read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spectui.bundle import BundleParts
from spectui.bundle.logcut import DEFAULT_LOG_BUDGET, line_time
from spectui.core.launch import flag_value
from spectui.errors import DiscoveryError, SpectuiError
from spectui.sources.base import Host, ServerProcess

READ_CAP_FACTOR = 8  # read at most this many --log-bytes of a huge log (its tail); the writer cuts further
MIN_READ_CAP = 64 << 20
Say = Callable[[str], None]


@dataclass
class RecordOptions:
    duration: float = 10.0  # seconds of /server_info, /metrics and GPU samples
    interval: float = 1.0  # seconds between samples
    log_bytes: int = DEFAULT_LOG_BUDGET
    pid: int | None = None
    server_port: int | None = None
    baseline_tps: float | None = None
    history_path: str | None = None  # default: the XDG launch history


@dataclass
class Recording:
    """What `collect` found, beside the parts: for the command's summary line."""

    parts: BundleParts
    server: ServerProcess | None
    log_path: str
    notes: list[str]


async def find_server(host: Host, log_path: str | None, pid: int | None) -> ServerProcess | None:
    """The server to record: the only one (or `pid`); with a log path, the one writing it, or None."""
    from spectui.sources.discover import SeveralServers, pick_server

    try:
        server = await pick_server(host, pid)
    except SeveralServers as exc:
        if log_path is None:
            raise
        return next((s for s in exc.servers if log_path in (s.log_path, s.stderr_path)), None)
    except DiscoveryError:
        if log_path is None or pid is not None:
            raise
        return None
    if log_path is None or pid is not None or log_path in (server.log_path, server.stderr_path):
        return server
    return None  # the only server writes another log: this log is recorded without a launch


async def read_log(host: Host, path: str, budget: int) -> tuple[bytes, int]:
    """(the log's bytes, how many leading bytes were not read): the whole file unless it is huge."""
    st = await host.stat(path)
    if st is None:
        raise DiscoveryError(f"no log file {path} on {host.name}; check the path")
    cap = max(MIN_READ_CAP, READ_CAP_FACTOR * budget)
    if st.size <= cap:
        return await host.read_file(path), 0
    start = st.size - cap
    data = await host.read_range(path, start, cap)
    cut = data.find(b"\n") + 1  # drop the partial first line
    return data[cut:], start + cut


async def sample(host: Host, server: ServerProcess | None, opts: RecordOptions, parts: BundleParts,
                 notes: list[str], *, clock: Callable[[], float] = time.time) -> None:
    """/server_info, /metrics and nvidia-smi every `interval` seconds for `duration` seconds."""
    from spectui.sources.gpu import query_gpus
    from spectui.sources.http import ServerProbe

    port = opts.server_port or (server.port if server else None)
    probe = None
    if port:
        api_key = flag_value(server.argv, "--api-key") if server else None
        probe = ServerProbe(host, port, server.host_addr if server else "127.0.0.1", timeout=5.0, api_key=api_key)
    said: set[str] = set()
    gpus_ok = True
    end = clock() + max(0.0, opts.duration)
    try:
        while True:
            t = clock()
            if probe is not None:
                try:
                    parts.server_info.append((t, await probe.server_info()))
                    resp = await probe._get("/metrics")  # the raw text: the bundle keeps it verbatim
                    if resp.status_code == 200:
                        parts.metrics.append((clock(), resp.text))
                    elif "metrics" not in said:
                        said.add("metrics")
                        notes.append(f"/metrics answered {resp.status_code} (start the server with --enable-metrics)")
                except SpectuiError as exc:
                    if "probe" not in said:
                        said.add("probe")
                        notes.append(f"server not answering: {exc}")
            if gpus_ok:
                gpus, why = await query_gpus(host)
                if gpus is None:
                    gpus_ok = False
                    notes.append(why)
                else:
                    parts.gpu.extend({"t": t, "index": g.index, "name": g.name, "memory_used_mib": g.mem_used_mib,
                                      "memory_total_mib": g.mem_total_mib, "utilization": g.util_pct,
                                      "temperature_c": g.temp_c, "power_w": g.power_w} for g in gpus)
            left = end - clock()
            if left <= 0:
                break
            await asyncio.sleep(min(opts.interval, left))
    finally:
        if probe is not None:
            await probe.close()


def analyse_log(log: bytes, argv: Sequence[str] | None, version: str | None,
                baseline_tps: float | None) -> dict[str, Any]:
    """The check pipeline over the log: diagnoses (check --json shape), the current launch's decode series
    (t from each line's own timestamp), the version guess, phase and the server's own server_args."""
    from spectui.core.log import DecodeSample, Pipeline, guess_version
    from spectui.sources.follow import make_engine

    pipe = Pipeline(engine=make_engine(list(argv) if argv else None, version, baseline_tps=baseline_tps), bulk=True)
    decode: list[DecodeSample] = []
    for update in (pipe.feed_bytes(log), pipe.finish()):
        decode.extend(r for r in update.records if type(r) is DecodeSample)
    snap = pipe.snapshot
    first = snap.launch_first_line or 1
    lines = log.splitlines()
    series = []
    for rec in decode:
        if rec.line < first:
            continue
        text = lines[rec.line - 1].decode("utf-8", "replace") if 0 < rec.line <= len(lines) else ""
        series.append({"t": line_time(text), "accept_len": rec.accept_len, "gen_tokens_per_s": rec.gen_tokens_per_s,
                       "running_req": rec.running_req, "queue_req": rec.queue_req, "line": rec.line,
                       "dp_rank": rec.ctx.dp_rank})
    diagnoses = [d.to_json() if hasattr(d, "to_json") else dict(d) for d in pipe.diagnoses]
    return {"diagnoses": diagnoses, "series": series, "version": guess_version(pipe.parser.version_hints),
            "phase": snap.phase.value, "server_args": dict(snap.server_args) if snap.server_args else None,
            "launch_first_line": snap.launch_first_line}


def config_of(argv: Sequence[str] | None, env: Mapping[str, str], version: str | None,
              server_args: Mapping[str, Any] | None) -> dict[str, Any]:
    """requested vs effective (SGLang dest names) and the pre-flight verdict, as `flags --json` has them;
    `effective` is the server's own server_args= line when the log holds one (else the prediction)."""
    from spectui.core.launch import SPEC_VIEW, parse_command, pick_version, resolve

    out: dict[str, Any] = {"requested": {}, "effective": None, "verdict": None}
    if not argv:
        return out
    try:
        cmd = parse_command(list(argv))
        picked, _ = pick_version(version)
        res = resolve(list(cmd.sglang_args), picked, env={**dict(cmd.env), **dict(env)}, entry=cmd.entry)
    except (SpectuiError, ValueError) as exc:
        return {**out, "verdict": "unknown", "error": str(exc)}
    keys = [*SPEC_VIEW, *(k for k in res.requested if k not in SPEC_VIEW)]
    predicted = {k: res.effective.get(k) for k in keys} if res.effective else None
    effective, source = predicted, "predicted"
    if server_args:
        effective, source = {k: server_args.get(k) for k in keys if k in server_args}, "server_args"
    err = {"type": res.error.type, "message": res.error.message} if res.error is not None else None
    return {"requested": dict(res.requested), "effective": effective, "verdict": res.outcome,
            "predicted": predicted, "effective_source": source, "sglang_version": picked,
            "argparse_error": res.argparse_error, "error": err, "warnings": list(res.warnings)}


def history_of(host_name: str, server: ServerProcess | None, log_path: str, path: str | None) -> dict[str, Any]:
    """This host's launches (oldest first) and any bench results recorded beside them."""
    from pathlib import Path

    from spectui.ops.history import HistoryStore

    store = HistoryStore(path)
    launches = [r.model_dump(mode="json") for r in store.read(host=host_name, limit=50)]
    # Bench results are this server's only (host + pid, or the log a launch wrote when no server runs):
    # the host's other servers, and earlier ones, are not mixed into the report (#24).
    mine = [r for r in launches if (r.get("new_pid") == server.pid if server is not None
                                    else bool(log_path) and r.get("log") == log_path)]
    ids = {mine[-1]["id"]} if mine else set()  # the latest launch of that pid: a reused pid is not this server
    bench: list[dict[str, Any]] = []
    with contextlib.suppress(OSError):
        for line in Path(store.path).read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if isinstance(obj, dict) and isinstance(obj.get("bench"), dict) and obj.get("id") in ids:
                    bench.append(obj["bench"])
    return {"launches": launches, "bench": bench, "server_pid": server.pid if server else None, "log": log_path}


async def collect(host: Host, *, log_path: str | None, target: str, opts: RecordOptions,
                  say: Say | None = None, clock: Callable[[], float] = time.time) -> Recording:
    """Record the server on `host` (already connected) into BundleParts."""
    say = say or (lambda _text: None)
    notes: list[str] = []
    server = await find_server(host, log_path, opts.pid)
    log_path = log_path or (server.log_path if server else None)
    if not log_path:
        raise DiscoveryError(f"server pid {server.pid if server else '?'} on {host.name} does not log to a file; "
                             f"give the log path as TARGET:/path/to/log")
    if await host.stat(log_path) is None:
        raise DiscoveryError(f"no log file {log_path} on {host.name}; check the path")
    parts = BundleParts(target=target, log_budget=opts.log_bytes)
    start = clock()
    if opts.duration > 0:
        say(f"recording {target} for {opts.duration:g} s …")
    await sample(host, server, opts, parts, notes, clock=clock)
    end = clock()
    log, skipped = await read_log(host, log_path, opts.log_bytes)
    if skipped:
        notes.append(f"the log is large: its first {skipped} bytes were not read")
    argv = list(server.argv) if server else None
    env = dict(server.env) if server else {}
    info = parts.server_info[-1][1] if parts.server_info else {}
    version = str(info["version"]) if info.get("version") else None
    analysis = await asyncio.to_thread(analyse_log, log, argv, version, opts.baseline_tps)
    version = version or analysis["version"]
    parts.sglang_version = version
    parts.log = log
    parts.series = analysis["series"]
    parts.diagnoses = analysis["diagnoses"]
    parts.config = {**config_of(argv, {}, version, analysis["server_args"]), "phase": analysis["phase"]}
    if argv:
        parts.launch = {"command": argv, "env": env, "cwd": server.cwd if server else None,
                        "pid": server.pid if server else None, "log_path": log_path, "port": server.port if server else None}
    else:
        parts.launch = {"command": None, "env": {}, "log_path": log_path}
        notes.append("no running server found for this log: launch command and environment not recorded")
    parts.history = history_of(host.name, server, log_path, opts.history_path)
    parts.window = (start, end)
    parts.created = end
    return Recording(parts, server, log_path, notes)
