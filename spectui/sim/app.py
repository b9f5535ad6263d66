"""The simulated server's life: bind, start-up milestones, serve (HTTP + engine + built-in traffic), faults, exit.

One process, one event loop, plus two idle children named as SGLang's (sim/children.py: the scheduler and
the detokenizer, in the same process group) so that what acts on a server's group meets a real tree; a
signal to the group reaches all of it, and a crash that "kills the process tree" SIGKILLs this process
(its children then leave by themselves).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from spectui.sim import faults
from spectui.sim.dpgroup import EngineGroup, scheduler_ranks
from spectui.sim.engine import Engine
from spectui.sim.http import PHRASES, Request, serve_connection
from spectui.sim.knobs import SimKnobs
from spectui.sim.logfmt import LogFormat
from spectui.sim.model import DecodeModel, SpecConfig
from spectui.sim.multinode import DummyHealth, Peers, node_plan
from spectui.sim.routes import Routes
from spectui.sim.startup import Startup
from spectui.sim.state import SimState


class _Crash(Exception):
    """Raised inside the engine loop to stop it the way a dying scheduler would."""


@dataclass
class Output:
    """SGLang's streams: logging on stderr, uvicorn's access log on stdout; both flushed per line."""

    err: TextIO | None = None
    out: TextIO | None = None

    def log(self, line: str) -> None:
        stream = self.err or sys.stderr
        stream.write(line + "\n")
        stream.flush()

    def access(self, line: str) -> None:
        stream = self.out or sys.stdout
        stream.write(line + "\n")
        stream.flush()


def _die(code_signal: int, out: Output) -> None:
    """Leave like SGLang's kill_process_tree: SIGKILL (137) — this process and its own children (sim/children.py),
    never a group."""
    from spectui.sim import children

    children.kill_all()
    for s in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            s.flush()
    os.kill(os.getpid(), code_signal)


class SimApp:
    def __init__(self, *, knobs: SimKnobs, fmt: LogFormat, args: dict[str, object], launch_argv: list[str],
                 spec: SpecConfig | None, draft_arch: str | None, out: Output | None = None) -> None:
        self.knobs, self.fmt, self.args, self.spec = knobs, fmt, args, spec
        self.out = out or Output()
        self.host = str(args.get("host") or "127.0.0.1")
        self.port = int(args.get("port") or 30000)  # type: ignore[call-overload]
        alpha = faults.LAYER_MISMATCH_ALPHA if knobs.fault and knobs.fault.name == "layer-mismatch" else knobs.alpha
        self.model = DecodeModel(knobs.baseline_tps, alpha, spec, **_model_knobs(knobs))
        attn_dp = int(args.get("attn_dp_size") or 1)  # type: ignore[call-overload]
        ranks = scheduler_ranks(int(args.get("tp_size") or 1), attn_dp if attn_dp > 1 else int(args.get("dp_size") or 1),  # type: ignore[call-overload]
                                bool(args.get("enable_dp_attention")) or attn_dp > 1)
        self.stop = asyncio.Event()
        self.node = node_plan(args)  # None: one node
        self.peers: Peers | None = None
        if self.node is not None:  # this node runs only its share of the scheduler ranks
            ranks = [g for g in ([r for r in group if r.tp in self.node.tp_ranks] for group in ranks) if g]
            overlap = spec is None and not args.get("disable_overlap_schedule")
            self.peers = Peers(self.node, fmt, self.out.log, self.stop, [r for g in ranks for r in g], overlap)
        self.startup = Startup(fmt=fmt, args=args, spec=spec, draft_arch=draft_arch, model_arch=knobs.model_arch,
                               log=self.out.log, pause=self.pause, ranks=[r for group in ranks for r in group],
                               rendezvous=self.peers.rendezvous if self.peers else None)
        self.stop_signal = 0
        # At --log-level warning SGLang logs no Prefill/Decode lines (they are INFO); the sim keeps the
        # start-up milestones either way, which a real server would drop too.
        info = str(args.get("log_level") or "info").lower() in ("debug", "info")
        self.engine = EngineGroup([
            Engine(model=self.model, fmt=fmt, write=self.out.log if info else _discard,
                   max_running=self.startup.max_running, max_total_tokens=self.startup.max_total_tokens,
                   decode_log_interval=int(args.get("decode_log_interval") or 40),  # type: ignore[call-overload]
                   graph_max_bs=self.startup.graph_max_bs, time_scale=knobs.time_scale, seed=knobs.seed + i,
                   dp_rank=group[0].dp, tp_rank=group[0].tp)
            for i, group in enumerate(ranks)])
        self.state = SimState(fmt=fmt, engine=self.engine, args=args, launch_argv=launch_argv, write=self.out.log,
                              max_total_tokens=self.startup.max_total_tokens, context_len=self.startup.context_len,
                              spec_counters=knobs.spec_counters)
        self.routes = Routes(self.state)
        self._crash: asyncio.Future[list[str]] | None = None
        self.access_exclude = list(args.get("uvicorn_access_log_exclude_prefixes") or [])  # type: ignore[call-overload]
        http_level = str(args.get("log_level_http") or args.get("log_level") or "info").lower()
        self.http_info = http_level in ("debug", "info", "trace")

    async def pause(self, sim_s: float) -> None:
        """Sleep sim_s simulated seconds, or less if asked to stop. Loops must also test self.stop:
        on Python 3.11, wait_for can swallow a cancellation that arrives as stop.wait() completes."""
        if self.stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), sim_s / self.knobs.time_scale)

    def _on_signal(self, signum: int) -> None:
        self.stop_signal = signum
        self.stop.set()

    def _bind(self) -> socket.socket | None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))  # asyncio listens when uvicorn "starts": refused until then
        except OSError as exc:
            sock.close()
            self.out.log(self.fmt.uvicorn(f"[Errno {exc.errno}] error while attempting to bind on address "
                                          f"({self.host!r}, {self.port}): {(exc.strerror or str(exc)).lower()}",
                                          level="ERROR"))
            return None
        return sock

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        self.out.log(self.fmt.main(self.fmt.server_args(self.args)))
        # The port is taken before loading, so a port clash fails in a second instead of after start-up.
        sock = self._bind()
        if sock is None:
            return 1
        from spectui.sim import children

        self.children = children.spawn()  # sglang::scheduler, sglang::detokenizer (sim/children.py)
        try:
            return await self._run(sock)
        finally:
            children.stop(self.children)
            sock.close()
            if self.peers is not None:
                self.peers.close()

    async def _run(self, sock: socket.socket) -> int:
        fault = self.knobs.fault
        ok = await self.startup.before_serving(oom=fault is not None and fault.name == "oom-at-capture")
        if self.stop.is_set():
            return self._exit_during_startup()
        lost = self.peers.lost if self.peers is not None else None
        if not ok or (lost is not None and lost.done()):  # a start-up fault: a scheduler died, the launcher kills the tree
            for line in lost.result() if ok and lost is not None else []:
                self.out.log(line)
            self.out.log(self.fmt.main(faults.SIGQUIT_LAUNCH))
            _die(signal.SIGKILL, self.out)
        if self.node is not None and self.node.node_rank >= 1:
            return await self._serve_worker(sock)
        server = await asyncio.start_server(self._connection, sock=sock)
        for line in self.fmt.uvicorn_startup(os.getpid(), self.host, self.port):
            self.out.log(line)
        self._crash = loop_future = asyncio.get_running_loop().create_future()
        if lost is not None:  # a node that goes away takes this one down (gloo: "Connection closed by peer")
            lost.add_done_callback(lambda f: loop_future.done() or loop_future.set_result(
                [*f.result(), self.fmt.main(faults.SIGQUIT_RUNNING)]))
        self.engine.set_before_round(self._check_faults)
        engine_task = asyncio.create_task(self._engine_guard())
        await self._warmup()
        if loop_future.done():
            for line in loop_future.result():
                self.out.log(line)
            _die(signal.SIGKILL, self.out)
        if self.stop.is_set():
            return await self._shutdown(server, engine_task)
        self.state.ready = True
        self.out.log(self.fmt.main("The server is fired up and ready to roll!"))
        traffic = asyncio.create_task(self._traffic()) if self.knobs.traffic_rps > 0 else None
        stop_task = asyncio.create_task(self.stop.wait())
        await asyncio.wait({stop_task, loop_future}, return_when=asyncio.FIRST_COMPLETED)
        if traffic:
            traffic.cancel()
        if loop_future.done():
            for line in loop_future.result():
                self.out.log(line)
            _die(signal.SIGKILL, self.out)
        stop_task.cancel()
        return await self._shutdown(server, engine_task)

    async def _serve_worker(self, sock: socket.socket) -> int:
        """A node >= 1 once its schedulers are ready: SGLang's launch_dummy_health_check_server on --host/--port,
        no tokenizer, no traffic, no Decode lines. A lost peer kills it; its SIGQUIT handler is still the
        launch-phase one (the running-phase handler belongs to the tokenizer manager, on node 0 only)."""
        assert self.peers is not None and self.peers.lost is not None
        health = DummyHealth(self.fmt)
        server: asyncio.Server | None = None
        if self.knobs.fault is not None and self.knobs.fault.name == "no-dummy-health":
            # sgl-project/sglang#12297: the dummy server is scheduled on an event loop that never runs again;
            # its line is logged, its port refuses connections.
            sock.close()
            self.out.log(self.fmt.main(f"Dummy health check server scheduled on existing loop at {self.host}:{self.port}"))
        else:
            server = await asyncio.start_server(lambda r, w: serve_connection(r, w, health, _no_access), sock=sock)
        if server is None:
            pass
        elif self.fmt.v >= (0, 5, 0):  # uvicorn at log level warning: its own INFO lines are not shown
            self.out.log(self.fmt.main(f"Starting dummy health check server at {self.host}:{self.port}"))
        else:  # older releases ran uvicorn.run() at its default level
            for line in self.fmt.uvicorn_startup(os.getpid(), self.host, self.port):
                self.out.log(line)
        stop_task = asyncio.create_task(self.stop.wait())
        await asyncio.wait({stop_task, self.peers.lost}, return_when=asyncio.FIRST_COMPLETED)
        if self.peers.lost.done():
            for line in self.peers.lost.result():
                self.out.log(line)
            self.out.log(self.fmt.main(faults.SIGQUIT_LAUNCH))
            _die(signal.SIGKILL, self.out)
        stop_task.cancel()
        if server is not None:
            server.close()
        return 0

    def _exit_during_startup(self) -> int:
        # Before uvicorn runs, SGLang has no handler: the signal's default action ends it.
        signal.signal(self.stop_signal, signal.SIG_DFL)
        _die(self.stop_signal, self.out)
        return 128 + self.stop_signal

    async def _shutdown(self, server: asyncio.AbstractServer, engine_task: asyncio.Task) -> int:
        server.close()
        for line in self.fmt.uvicorn_shutdown(os.getpid()):
            self.out.log(line)
        engine_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await engine_task
        return 0

    async def _engine_guard(self) -> None:
        try:
            await self.engine.run()
        except* _Crash:
            pass  # a scheduler "died": _run prints its last words and ends the process

    def _check_faults(self) -> None:
        fault, crash = self.knobs.fault, self._crash
        if fault is None or crash is None or crash.done():
            return
        stats = self.engine.stats
        if fault.name == "crash-after" and stats.requests_finished >= fault.count + 1:  # +1: the warm-up request
            crash.set_result([self.fmt.sched("Scheduler hit an exception: Traceback (most recent call last):"),
                              *faults.runtime_crash(), self.fmt.main(faults.SIGQUIT_RUNNING)])
            raise _Crash
        if fault.name == "nccl-timeout" and self.state.ready and stats.generation_tokens_total > 0:
            asyncio.get_running_loop().create_task(self._nccl_hang())
            raise _Crash

    async def _nccl_hang(self) -> None:
        await self.pause(faults.NCCL_HANG_S)
        if self._crash is not None and not self._crash.done():
            stamp = time.strftime("%m%d %H:%M:%S")
            self._crash.set_result([*faults.nccl_watchdog(stamp, 4242), self.fmt.main(faults.SIGQUIT_RUNNING)])

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(reader, writer, self.routes, self._access_log)

    def _access_log(self, req: Request, status: int) -> None:
        self._access(req.client, req.method, req.path, status)

    def _access(self, client: str, method: str, path: str, status: int = 200) -> None:
        if not self.http_info or any(path.startswith(str(p)) for p in self.access_exclude):
            return  # --log-level-http warning / --uvicorn-access-log-exclude-prefixes (0.5.8+)
        phrase = PHRASES.get(status, "OK")
        self.out.access(self.fmt.access(client, method, path, status, phrase))

    async def _warmup(self) -> None:
        """What SGLang's _wait_and_warmup does: model info, then one short /generate."""
        client = f"127.0.0.1:{random.randint(40000, 60000)}"
        if self.fmt.model_info_path == "/get_model_info" and self.fmt.v >= (0, 5, 6):
            self.out.log(self.fmt.main(self.fmt.deprecated_endpoint("/get_model_info", "/model_info")))
        self._access(client, "GET", self.fmt.model_info_path)
        req = self.engine.submit(prompt_tokens=6, max_tokens=8)
        while await req.chunks.get() is not None:
            pass
        self._access(client, "POST", "/generate")
        await self.pause(0.2)

    async def _traffic(self) -> None:
        """A built-in benchmark client: Poisson arrivals at --sim-traffic requests/s (simulated time), at most
        --sim-concurrency in flight (0: no limit, but never a queue longer than the running batch)."""
        rng = random.Random(self.knobs.seed + 1)
        slots = asyncio.Semaphore(self.knobs.concurrency) if self.knobs.concurrency else None
        while not self.stop.is_set():
            await self.pause(rng.expovariate(self.knobs.traffic_rps))
            if slots is not None:
                await slots.acquire()
            elif self.engine.waiting >= self.engine.max_running:
                continue  # like a benchmark client's --max-concurrency: do not pile up an endless queue
            client = f"127.0.0.1:{rng.randint(40000, 60000)}"
            req = self.engine.submit(prompt_tokens=rng.randint(200, 1200), max_tokens=self.knobs.output_len)
            self._access(client, "POST", "/v1/chat/completions")
            asyncio.get_running_loop().create_task(_drain(req.chunks, slots))


def _discard(line: str) -> None:
    pass


def _no_access(req: Request, status: int) -> None:
    pass


def _model_knobs(knobs: SimKnobs) -> dict[str, float]:
    """--sim-alpha-decay / --sim-verify-cost when given; the model's documented defaults otherwise."""
    out = {"decay": knobs.alpha_decay, "verify_cost": knobs.verify_cost}
    return {k: float(v) for k, v in out.items() if v is not None}


async def _drain(chunks: asyncio.Queue, slots: asyncio.Semaphore | None = None) -> None:
    while await chunks.get() is not None:
        pass
    if slots is not None:
        slots.release()
