"""The orchestration behind `spectui bench` (CONTRACTS.md): find the server, reach its port (through the
SSH forward), read its speculative config and version, warm up, load it for a measured window
(spectui.load), compute the accept length over exactly that window, compare with a baseline, record.

Accept length over the window, first source that has it (`spec.source`):
  server_info_counters  /server_info internal_states' `spec_cumulative_num_accept_tokens` /
                        `spec_cumulative_num_forward_ct` (a patched build's), read right before and after
                        the window and differenced: Δaccepted tokens / Δverify rounds
  per_request           the spec fields each response carried: Σ(accepted drafts + verify rounds) /
                        Σ verify rounds (the Decode line's definition), else Σ completion tokens / Σ verify
  log                   the `Decode batch` lines the server logged between the window's start and end (the
                        log's byte offsets read before and after), their mean accept len
Per request, SGLang's identity spec_accept_length = completion_tokens / spec_verify_ct (and accept rate =
accepted / proposed) is checked; a violation is reported (`identities_ok` false, `violations`) and the
per-request figure is not used. The warm-up runs as its own load before the window, so neither the
counters nor the log lines of the window see it.

Bench results are kept in bench.jsonl beside the launch history (the same XDG state folder); when the
server is one a recorded relaunch started, the result is also attached to that launch
(`{"id": launch, "bench": …}`, what `record`'s history section reads).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from spectui.errors import ProbeError, SpectuiError, UsageError
from spectui.load import BenchConfig, BenchInterrupted, BenchResult, Progress, PromptSet, run_bench
from spectui.load.runner import warmup_failure
from spectui.ops.bench.history import bench_history_path, bench_records
from spectui.ops.history import HistoryStore, now_iso
from spectui.sources.base import Host, ServerProcess
from spectui.sources.discover import flag_value, server_api_key
from spectui.sources.http import ServerProbe

COUNTER_ACCEPT = "spec_cumulative_num_accept_tokens"
COUNTER_FORWARD = "spec_cumulative_num_forward_ct"
SPEC_KEYS = ("speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
             "speculative_num_draft_tokens")
WORKLOAD_KEYS = ("prompts", "concurrency", "rate", "max_tokens", "temperature")
IDENTITY_TOL = 0.01  # relative; SGLang rounds nothing, but a JSON float may lose a digit


@dataclass(frozen=True)
class BenchPlan:
    config: BenchConfig  # base_url is filled in once the port is reached
    prompts: PromptSet
    pid: int | None = None
    server_port: int | None = None
    baseline_tps: float | None = None
    history_path: Path | str | None = None  # the launch history file; bench.jsonl goes beside it
    details: bool = False  # `per_request` in the result: every measured request's figures and ITLs


@dataclass
class Server:
    proc: ServerProcess | None
    port: int
    addr: str
    version: str | None
    info: dict[str, Any]
    speculative: dict[str, Any] | None
    api_key: str | None = None  # --api-key given, else the server's own (its command line): sent, never shown


async def find_server(host: Host, pid: int | None, port: int | None) -> ServerProcess | None:
    """The server process: `pid`, or the one listening on `port` (None when no discovered process says
    so: the port is then used as given), or the only one on the host."""
    from spectui.sources.discover import discover, pick_server

    if pid is not None or port is None:
        return await pick_server(host, pid)
    try:
        found = [p for p in await discover(host) if p.port == port]
    except SpectuiError:
        return None
    return found[0] if len(found) == 1 else None


def speculative_config(argv: list[str] | None, env: dict[str, str], version: str | None,
                       info: dict[str, Any]) -> dict[str, Any] | None:
    """The effective speculative settings: the command resolved as SGLang `version` would, else the
    values /server_info shows; None without speculation."""
    out: dict[str, Any] = {}
    if argv:
        from spectui.core.launch import parse_command, pick_version, resolve

        try:
            cmd = parse_command(argv)
            picked, _ = pick_version(version)
            res = resolve(list(cmd.sglang_args), picked, env={**dict(cmd.env), **env}, entry=cmd.entry)
            if res.effective:
                out = {k: res.effective.get(k) for k in SPEC_KEYS}
        except (SpectuiError, ValueError):
            out = {}
    if not out.get("speculative_algorithm") and info.get("speculative_algorithm"):
        out = {k: info.get(k) for k in SPEC_KEYS}
    return out if out.get("speculative_algorithm") else None


def draft_path(argv: Sequence[str]) -> str | None:
    """The command's --speculative-draft-model-path (which draft a measured accept length belongs to)."""
    return flag_value(argv, "--speculative-draft-model-path") or None


def read_counters(info: dict[str, Any]) -> tuple[int, int] | None:
    """(Σ accepted tokens, Σ verify rounds) over the DP ranks, or None when the build has no counters."""
    states = info.get("internal_states")
    blocks = [s for s in states if isinstance(s, dict)] if isinstance(states, list) else [info]
    acc = [b.get(COUNTER_ACCEPT) for b in blocks]
    fwd = [b.get(COUNTER_FORWARD) for b in blocks]
    if not acc or any(not isinstance(x, int | float) for x in (*acc, *fwd)):
        return None
    return int(sum(acc)), int(sum(fwd))  # type: ignore[arg-type]


def check_identities(result: BenchResult) -> tuple[bool | None, list[str]]:
    """SGLang's per-request identities; None when no response carried a verify count."""
    checked, bad = 0, []
    for r in result.records:
        spec, tokens = r.spec, r.output_tokens
        if not r.ok or not spec or not spec.verify_ct or not tokens:
            continue
        checked += 1
        want = tokens / spec.verify_ct
        if spec.accept_length is not None and not math.isclose(spec.accept_length, want, rel_tol=IDENTITY_TOL):
            bad.append(f"request {r.index}: spec_accept_length {spec.accept_length:g} != completion_tokens "
                       f"{tokens} / spec_verify_ct {spec.verify_ct} = {want:.4g}")
        acc, prop = spec.accepted_drafts, spec.proposed_drafts
        if spec.accept_rate is not None and acc is not None and prop \
                and not math.isclose(spec.accept_rate, acc / prop, rel_tol=IDENTITY_TOL, abs_tol=1e-6):
            bad.append(f"request {r.index}: spec_accept_rate {spec.accept_rate:g} != accepted {acc} / "
                           f"proposed {prop}")
        if acc is not None and acc > tokens:
            bad.append(f"request {r.index}: {acc} accepted drafts but only {tokens} completion tokens")
    return (None if not checked else not bad), bad


def per_request_accept(result: BenchResult) -> tuple[float | None, float | None]:
    """(accept length, accept rate) pooled over the window's requests, or (None, None)."""
    recs = [r for r in result.records if r.ok and r.spec and r.spec.verify_ct and r.output_tokens]
    if not recs:
        return None, None
    verify = sum(r.spec.verify_ct or 0 for r in recs)
    accepted = [r.spec.accepted_drafts for r in recs]
    proposed = [r.spec.proposed_drafts for r in recs]
    if all(a is not None for a in accepted):
        length = (sum(a or 0 for a in accepted) + verify) / verify
    else:
        length = sum(r.output_tokens or 0 for r in recs) / verify
    rate = None
    if all(a is not None for a in accepted) and all(p for p in proposed):
        rate = sum(a or 0 for a in accepted) / sum(p or 0 for p in proposed)
    return length, rate


def log_accept(data: bytes) -> tuple[float | None, int]:
    """Mean accept len of the Decode lines in `data` (the log between the window's offsets), lines used."""
    from spectui.core.log import DecodeSample, LogParser

    lines = [rec for rec in LogParser().feed_bytes(data)
             if isinstance(rec, DecodeSample) and rec.accept_len is not None]
    if not lines:
        return None, 0
    # Each line is Σ(accepted + 1) / Σ batch over its interval: weighted by the batch it reports.
    weights = [max(1, rec.running_req or 1) for rec in lines]
    return sum(w * (rec.accept_len or 0.0) for w, rec in zip(weights, lines, strict=True)) / sum(weights), len(lines)


def rate_from_length(length: float | None, spec: dict[str, Any]) -> float | None:
    ndt = spec.get("speculative_num_draft_tokens")
    if length is None or not isinstance(ndt, int) or ndt < 2:
        return None
    return (length - 1) / (ndt - 1)


class _LogMark:
    def __init__(self, host: Host, path: str | None) -> None:
        self.host, self.path, self.offset = host, path, None

    async def size(self) -> int | None:
        if self.path is None:
            return None
        try:
            st = await self.host.stat(self.path)
        except (SpectuiError, OSError):
            return None
        return st.size if st else None


async def _info(probe: ServerProbe) -> dict[str, Any]:
    try:
        return await probe.server_info()
    except ProbeError:
        return {}


async def reach(host: Host, plan: BenchPlan) -> tuple[Server, ServerProbe]:
    proc = await find_server(host, plan.pid, plan.server_port)
    port = plan.server_port or (proc.port if proc else None)
    if port is None:
        raise UsageError("no server port: give --server-port N or --pid PID")
    addr = proc.host_addr if proc else "127.0.0.1"
    api_key = plan.config.api_key or (server_api_key(proc.argv) if proc else None)
    probe = ServerProbe(host, port, addr, timeout=10.0, api_key=api_key)
    await probe.start()
    health = await probe.health()
    if health.status_code is None:
        await probe.close()
        raise UsageError(f"nothing answers on {host.name} port {port}: check --server-port (or --pid) and "
                         "that the server is up")
    info = await _info(probe)
    version = str(info["version"]) if info.get("version") else None
    argv = list(proc.argv) if proc else None
    if argv is None and isinstance(info.get("launch_command"), str):
        argv = info["launch_command"].split()
    spec = speculative_config(argv, dict(proc.env) if proc else {}, version, info)
    return Server(proc, port, addr, version, info, spec, api_key), probe


async def run(host: Host, plan: BenchPlan, *, on_progress: Callable[[Progress], None] | None = None,
              on_phase: Callable[[str], None] | None = None, stop: Any = None) -> dict[str, Any]:
    """The whole bench; returns the contract's JSON object (history_id included). `stop` (an
    asyncio.Event, Ctrl-C): the requests that completed are measured and recorded, `interrupted` true."""
    server, out = await measure(host, plan, on_progress=on_progress, on_phase=on_phase, stop=stop)
    if out.get("interrupted") and not out["requests"]["ok"] + out["requests"]["failed"]:
        raise BenchInterrupted("interrupted before any request completed: nothing was measured or recorded")
    out["history_id"] = record(host.name, server, out, plan.history_path)
    return out


async def measure(host: Host, plan: BenchPlan, *, on_progress: Callable[[Progress], None] | None = None,
                  on_phase: Callable[[str], None] | None = None, stop: Any = None) -> tuple[Server, dict[str, Any]]:
    """Warm up and measure one window; the contract's object without history_id (nothing recorded)."""
    server, probe = await reach(host, plan)
    try:
        config = replace(plan.config, base_url=probe.base_url, speculative=server.speculative is not None,
                         api_key=server.api_key)
        if config.warmup:
            if on_phase:
                on_phase("warmup")
            warm = replace(config, requests=config.warmup, duration_s=None, rate=None, warmup=0, flush_cache=False)
            warmed = await run_bench(warm, plan.prompts, on_progress=on_progress, stop=stop)
            failed = None if warmed.interrupted else warmup_failure(warmed.records)
            if failed is not None:
                raise failed
        log = _LogMark(host, server.proc.log_path if server.proc else None)
        before_off = await log.size()
        before = read_counters(await _info(probe)) if server.speculative else None
        if on_phase:
            on_phase("measure")
        result = await run_bench(replace(config, warmup=0), plan.prompts, on_progress=on_progress, stop=stop)
        after = read_counters(await _info(probe)) if before is not None else None
        after_off = await log.size()
        data = b""
        if server.speculative and before_off is not None and after_off is not None and after_off > before_off:
            assert log.path is not None
            data = await host.read_range(log.path, before_off, after_off - before_off)
    finally:
        await probe.close()
    return server, assemble(host.name, server, plan, result, before, after, data)


def spec_block(server: Server, result: BenchResult, before: tuple[int, int] | None,
               after: tuple[int, int] | None, log_data: bytes) -> dict[str, Any] | None:
    if server.speculative is None:
        return None
    ok, violations = check_identities(result)
    out: dict[str, Any] = {"accept_len": None, "accept_rate": None, "source": None, "identities_ok": ok}
    if violations:
        out["violations"] = violations[:10]
    if before is not None and after is not None and after[1] > before[1]:
        length = (after[0] - before[0]) / (after[1] - before[1])
        out.update(accept_len=round(length, 4), accept_rate=_r(rate_from_length(length, server.speculative)),
                   source="server_info_counters", verify_rounds=after[1] - before[1])
        return out
    if ok is not None:
        out["source"] = "per_request"
        if ok:
            length, rate = per_request_accept(result)
            out.update(accept_len=_r(length), accept_rate=_r(rate if rate is not None
                                                             else rate_from_length(length, server.speculative)))
        return out
    length, lines = log_accept(log_data)
    if length is not None:
        out.update(accept_len=round(length, 4), accept_rate=_r(rate_from_length(length, server.speculative)),
                   source="log", decode_lines=lines)
    return out


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def workload_key(workload: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(workload.get(k) for k in WORKLOAD_KEYS)


def history_baseline(host: str, model: str | None, workload: dict[str, Any],
                     history_path: Path | str | None) -> dict[str, Any] | None:
    """The last recorded bench on the same host, model and workload with speculation off."""
    key = workload_key(workload)
    for obj in reversed(bench_records(history_path, host=host)):
        res = obj["result"]
        if obj.get("model") != model:
            continue
        srv = res.get("server") or {}
        if srv.get("speculative") is None and workload_key(res.get("workload") or {}) == key \
                and res.get("output_tokens_per_s"):
            return {"output_tokens_per_s": res["output_tokens_per_s"],
                    "per_request_tokens_per_s": {"mean": (res.get("per_request_tokens_per_s") or {}).get("mean")},
                    "source": "history", "history_id": obj.get("id")}
    return None


def robust_mean(res: dict[str, Any]) -> float | None:
    """A recorded per-request mean, only under today's definition: records before it averaged 1/TPOT per
    request, where one single-chunk answer could inflate the mean a hundredfold (no speedup from those)."""
    per = res.get("per_request_tokens_per_s") or {}
    return per.get("mean") if per.get("definition") == "decode_tokens_over_decode_time" else None


def assemble(host_name: str, server: Server, plan: BenchPlan, result: BenchResult, before: tuple[int, int] | None,
             after: tuple[int, int] | None, log_data: bytes) -> dict[str, Any]:
    body = result.to_json()
    body["workload"]["warmup"] = plan.config.warmup  # run as its own load before the window
    out: dict[str, Any] = {
        "server": {"pid": server.proc.pid if server.proc else None, "port": server.port,
                   "sglang_version": server.version, "speculative": server.speculative},
        **body,
        "spec": spec_block(server, result, before, after, log_data),
    }
    if plan.details:
        out["per_request"] = [{**r.to_json(), "itls": [round(x, 6) for x in r.itls]} for r in result.records]
    baseline = None
    if plan.baseline_tps is not None:
        baseline = {"output_tokens_per_s": plan.baseline_tps, "per_request_tokens_per_s": {"mean": None},
                    "source": "given"}
    elif server.speculative is not None:
        baseline = history_baseline(host_name, out["workload"].get("model"), out["workload"], plan.history_path)
    out["baseline"] = baseline
    out["speedup"] = speedup(out, baseline)
    return out


def speedup(out: dict[str, Any], baseline: dict[str, Any] | None) -> dict[str, Any] | None:
    if baseline is None:
        return None

    def ratio(a: Any, b: Any) -> float | None:
        return round(a / b, 3) if isinstance(a, int | float) and isinstance(b, int | float) and b > 0 else None

    return {"output_tokens_per_s": ratio(out.get("output_tokens_per_s"), baseline.get("output_tokens_per_s")),
            "per_request_tokens_per_s": ratio((out.get("per_request_tokens_per_s") or {}).get("mean"),
                                              (baseline.get("per_request_tokens_per_s") or {}).get("mean"))}


def record(host_name: str, server: Server, out: dict[str, Any], history_path: Path | str | None) -> str:
    """Append the result to bench.jsonl (and to the launch that started this server, if recorded)."""
    import fcntl
    import json

    bench_id = uuid.uuid4().hex[:12]
    out = {k: v for k, v in out.items() if k != "per_request"}  # details go to --output-file, not history
    line = {"id": bench_id, "time": now_iso(), "host": host_name, "pid": server.proc.pid if server.proc else None,
            "port": server.port, "model": out["workload"].get("model"),
            "draft": draft_path(server.proc.argv) if server.proc else None, "result": {**out, "history_id": bench_id}}
    path = bench_history_path(history_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
    except OSError as exc:
        raise SpectuiError(f"cannot record the bench result in {path}: {exc}") from None
    if server.proc is not None:
        store = HistoryStore(history_path)
        launch = next((r for r in reversed(store.read(host=host_name)) if r.new_pid == server.proc.pid), None)
        if launch is not None:
            store.update(launch.id, bench={**out, "history_id": bench_id})
    return bench_id
