"""Multi-node SGLang (`--nnodes N --node-rank R --dist-init-addr HOST:PORT`): rendezvous, roles, lost peers.

What SGLang and torch do (docs/SIMULATOR.md "Multi-node" has the sources):

* every node's schedulers call `torch.distributed.init_process_group(init_method="tcp://HOST:PORT")`; global
  rank 0 (node 0, TP0) hosts a TCPStore on PORT, every other rank connects to it, retrying while nothing
  listens. Nothing proceeds until all `tp_size * pp_size` ranks joined. The timeout is `--dist-timeout`
  seconds, or torch's default for the NCCL backend (10 minutes) when it is not given.
* on timeout the store host raises `DistStoreError: Timed out after … seconds waiting for clients. K/N
  clients joined.`; a client that never reaches the store raises `DistNetworkError: The client socket has
  timed out after …ms while trying to connect to (HOST, PORT).`
* node 0 serves HTTP; a node ≥ 1 runs scheduler ranks only and, once they are ready, a dummy health server.
* while serving, the schedulers talk over gloo (requests are broadcast every loop iteration), so a peer
  that dies makes the survivors fail at once with gloo's `Connection closed by peer`.

The simulator's stand-in is one TCP connection per node ≥ 1 to node 0's listener on PORT: a `JOIN` line
(node rank, ranks on that node), a `GO` line back once all ranks joined, then the connection stays open
for the life of the process. EOF on either side means the peer is gone. Waiting is wall-clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from spectui.sim.dpgroup import Rank
from spectui.sim.faults import frames_under
from spectui.sim.http import Request, Response
from spectui.sim.logfmt import LogFormat

DEFAULT_TIMEOUT_S = 600.0  # torch: kProcessGroupNCCLDefaultTimeout, the NCCL backend's default timeout
RETRY_S = 0.25  # how often a client retries a refused connect (torch backs off with jitter)
SITE = "/usr/local/lib/python3.12/dist-packages"


@dataclass(frozen=True, slots=True)
class NodePlan:
    nnodes: int
    node_rank: int
    host: str  # --dist-init-addr, where rank 0's store listens
    port: int
    timeout_s: float  # wall-clock seconds
    world_size: int  # tp_size * pp_size: every rank is one store client
    tp_ranks: range  # this node's TP ranks (SGLang's _calculate_rank_ranges)
    pp_ranks: range

    @property
    def local_ranks(self) -> int:
        return len(self.tp_ranks) * len(self.pp_ranks)


def rank_ranges(nnodes: int, pp_size: int, tp_size: int, node_rank: int) -> tuple[range, range]:
    """SGLang's `_calculate_rank_ranges` (srt/entrypoints/engine.py): this node's PP and TP ranks."""
    pp_per_node = max(pp_size // nnodes, 1)
    nnodes_per_pp_rank = max(nnodes // pp_size, 1)
    pp = range(pp_per_node * (node_rank // nnodes_per_pp_rank), pp_per_node * (node_rank // nnodes_per_pp_rank + 1))
    tp_per_node = max(tp_size // nnodes_per_pp_rank, 1)
    tp = range(tp_per_node * (node_rank % nnodes_per_pp_rank), tp_per_node * (node_rank % nnodes_per_pp_rank + 1))
    return pp, tp


def _split_addr(addr: str) -> tuple[str, int] | None:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def node_plan(args: dict[str, object]) -> NodePlan | None:
    """The node's place in a multi-node launch; None for one node. A PD side (`--disaggregation-mode`) spread
    over nodes is a multi-node server of its own, with its own `--dist-init-addr`: the same rendezvous."""
    nnodes = int(args.get("nnodes") or 1)  # type: ignore[call-overload]
    if nnodes <= 1:
        return None
    node_rank = int(args.get("node_rank") or 0)  # type: ignore[call-overload]
    tp, pp = int(args.get("tp_size") or 1), int(args.get("pp_size") or 1)  # type: ignore[call-overload]
    # Without --dist-init-addr SGLang uses 127.0.0.1 and a port of its own choosing on every node: the
    # nodes never meet. Port 0 stands for that (the host binds an ephemeral port, a client finds nothing).
    where = _split_addr(str(args.get("dist_init_addr") or "")) or ("127.0.0.1", 0)
    timeout = args.get("dist_timeout")
    pp_r, tp_r = rank_ranges(nnodes, pp, tp, node_rank)
    return NodePlan(nnodes, node_rank, where[0], where[1], float(timeout) if timeout else DEFAULT_TIMEOUT_S,  # type: ignore[arg-type]
                    max(1, tp * pp), tp_r, pp_r)


def _frames(*frames: tuple[str, int, str, str]) -> list[str]:
    return frames_under(SITE, *frames)


# ModelRunner.init_torch_distributed -> init_distributed_environment -> init_process_group -> the tcp://
# rendezvous -> TCPStore (sglang #11959's frames down to parallel_state; torch's rendezvous.py below it).
_INIT = (
    ("sglang/srt/managers/scheduler.py", 2960, "run_scheduler_process", "scheduler = Scheduler("),
    ("sglang/srt/managers/scheduler.py", 331, "__init__", "self.init_model_worker()"),
    ("sglang/srt/managers/scheduler.py", 489, "init_model_worker", "self.tp_worker = TpModelWorker("),
    ("sglang/srt/managers/tp_worker.py", 95, "__init__", "self.model_runner = ModelRunner("),
    ("sglang/srt/model_executor/model_runner.py", 286, "__init__", "min_per_gpu_memory = self.init_torch_distributed()"),
    ("sglang/srt/model_executor/model_runner.py", 682, "init_torch_distributed", "init_distributed_environment("),
    ("sglang/srt/distributed/parallel_state.py", 1404, "init_distributed_environment", "torch.distributed.init_process_group("),
    ("torch/distributed/c10d_logger.py", 81, "wrapper", "return func(*args, **kwargs)"),
    ("torch/distributed/c10d_logger.py", 95, "wrapper", "func_return = func(*args, **kwargs)"),
    ("torch/distributed/distributed_c10d.py", 1710, "init_process_group", "store, rank, world_size = next(rendezvous_iterator)"),
    ("torch/distributed/rendezvous.py", 278, "_tcp_rendezvous_handler", "store = _create_c10d_store("),
    ("torch/distributed/rendezvous.py", 198, "_create_c10d_store", "return TCPStore("),
)


def _loop_frames(overlap: bool) -> tuple[tuple[str, int, str, str], ...]:
    """The scheduler loop's request broadcast over the TP group's gloo (CPU) group (sglang #18943, #3685)."""
    loop = "event_loop_overlap" if overlap else "event_loop_normal"
    return (
        ("sglang/srt/managers/scheduler.py", 3160, "run_scheduler_process", f"scheduler.{loop}()"),
        ("torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
        ("sglang/srt/managers/scheduler.py", 1136, loop, "recv_reqs = self.recv_requests()"),
        ("sglang/srt/managers/scheduler.py", 1281, "recv_requests", "control_reqs = broadcast_pyobj("),
        ("sglang/srt/utils/common.py", 1303, "broadcast_pyobj", "dist.broadcast(tensor_size, src=src, group=dist_group)"),
        ("torch/distributed/c10d_logger.py", 81, "wrapper", "return func(*args, **kwargs)"),
        ("torch/distributed/distributed_c10d.py", 2841, "broadcast", "work.wait()"),
    )


def _glog(level: str, where: str, msg: str) -> str:
    """A c10d C++ log line: `[E728 15:01:59.561275187 socket.cpp:1028] [c10d] …` (month not zero-padded)."""
    now = time.time()
    t = time.localtime(now)
    return f"[{level}{t.tm_mon}{t.tm_mday:02d} {time.strftime('%H:%M:%S', t)}.{int(now % 1 * 1e9):09d} {where}] [c10d] {msg}"


class DummyHealth:
    """SGLang's launch_dummy_health_check_server on a node ≥ 1: /health and /health_generate (and /ping
    in newer releases) answer 200 with no body; anything else is FastAPI's 404/405. uvicorn runs at log
    level warning there, so nothing is access-logged."""

    def __init__(self, fmt: LogFormat) -> None:
        self.paths = {"/health", "/health_generate"} | ({"/ping"} if fmt.v >= (0, 5, 20) else set())

    async def __call__(self, req: Request) -> Response:
        if req.path not in self.paths:
            return Response.json({"detail": "Not Found"}, 404)
        if req.method != "GET":
            return Response.json({"detail": "Method Not Allowed"}, 405)
        return Response(200)


class Peers:
    """This node's side of the rendezvous and of the open connections that stand for the NCCL/gloo groups."""

    def __init__(self, plan: NodePlan, fmt: LogFormat, log: Callable[[str], None], stop: asyncio.Event,
                 ranks: list[Rank], overlap: bool) -> None:
        self.plan, self.fmt, self.log, self.stop, self.overlap = plan, fmt, log, stop, overlap
        self.ranks = ranks or [Rank(None, plan.tp_ranks.start)]
        self.lost: asyncio.Future[list[str]] | None = None  # set (with the survivors' lines) when a peer goes
        self.joined = False
        self._closing = False
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task] = set()
        self._ranks_in = plan.local_ranks
        self._changed = asyncio.Event()
        self._gone_early: list[str] = []

    # -- the rendezvous ------------------------------------------------------------------------------
    async def rendezvous(self) -> bool:
        """Wait for every rank (True), or log the failing scheduler's traceback / be stopped (False)."""
        self.lost = asyncio.get_running_loop().create_future()
        ok = await (self._host() if self.plan.node_rank == 0 else self._join())
        self.joined = ok
        if ok and self._gone_early:
            self._lose(self._gone_early[0])
        return ok

    async def _host(self) -> bool:
        plan = self.plan
        try:  # torch's TCPStore server listens on every local address
            self._server = await asyncio.start_server(self._client, None, plan.port)
        except OSError:
            self._fail(f"torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
                       f"network address. port: {plan.port}, useIpv6: 0, code: -98, name: EADDRINUSE, "
                       "message: address already in use")
            return False
        start = time.monotonic()
        while self._ranks_in < plan.world_size:
            elapsed = int(time.monotonic() - start)  # TCPStore::waitForWorkers: whole seconds, elapsed > timeout
            if elapsed > plan.timeout_s:
                self._fail(f"torch.distributed.DistStoreError: Timed out after {elapsed} seconds waiting for "
                           f"clients. {self._ranks_in}/{plan.world_size} clients joined.")
                return False
            if self.stop.is_set():
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.05)
        for writer in self._writers:
            with contextlib.suppress(ConnectionError, OSError):
                writer.write(b"GO\n")
        return not self.stop.is_set()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            words = (await reader.readline()).decode("latin-1").split()
        except (ConnectionError, OSError):
            words = []
        if len(words) != 3 or words[0] != "JOIN" or not words[2].isdigit() or self.joined:
            writer.close()  # not a simulated node, or one too late for this group
            return
        peer = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        self._writers.append(writer)
        self._ranks_in += int(words[2])
        self._changed.set()
        try:
            await self._watch(reader, f"[{peer[0]}]:{peer[1]}")
        except asyncio.CancelledError:
            # Shutting down (SIGTERM): asyncio's start_server callback would print the cancellation as an
            # "Exception in callback" traceback on stderr, which no SGLang prints. This handler just ends.
            return

    async def _join(self) -> bool:
        plan = self.plan
        start = time.monotonic()
        while True:
            try:
                reader, writer = await asyncio.open_connection(plan.host, plan.port)
                break
            except OSError:
                if self.stop.is_set():
                    return False
                left = plan.timeout_s - (time.monotonic() - start)
                if left <= 0:
                    self._client_timeout()
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), min(RETRY_S, left))
        self._writers.append(writer)
        writer.write(f"JOIN {plan.node_rank} {plan.local_ranks}\n".encode())
        stop = asyncio.ensure_future(self.stop.wait())
        go = asyncio.ensure_future(reader.readline())
        await asyncio.wait({stop, go}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if not go.done():
            go.cancel()
            return False
        if go.exception() is not None or go.result() != b"GO\n":
            # The store host went away before every rank joined (it timed out, or was stopped).
            self._fail("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely "
                       "closed. Did the remote server shutdown or crash?")
            return False
        task = asyncio.create_task(self._watch(reader, f"[{plan.host}]:{plan.port}"))
        self._tasks.add(task)
        return True

    def _client_timeout(self) -> None:
        plan = self.plan
        ms = int(plan.timeout_s * 1000)
        msg = f"The client socket has timed out after {ms}ms while trying to connect to ({plan.host}, {plan.port})."
        self.log(_glog("E", "socket.cpp:1028", msg))
        self.log(_glog("E", "TCPStore.cpp:328", f"TCP client failed to connect/validate to host {plan.host}:"
                                                f"{plan.port} - timed out (try=0, timeout={ms}ms): {msg}"))
        self._fail(f"torch.distributed.DistNetworkError: {msg}")

    def _fail(self, exc_line: str) -> None:
        """A scheduler's start-up traceback; the first rank on the node is the one that fails."""
        rank = self.ranks[0]
        self.log(self.fmt.sched("Scheduler hit an exception: Traceback (most recent call last):", rank.tp, rank.dp))
        for line in [*_frames(*_INIT), exc_line, ""]:
            self.log(line)

    # -- serving: a peer that goes away -------------------------------------------------------------
    async def _watch(self, reader: asyncio.StreamReader, peer: str) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while await reader.read(4096):
                pass
        if self._closing:
            return
        if self.joined:
            self._lose(peer)
        else:
            self._gone_early.append(peer)

    def _lose(self, peer: str) -> None:
        if self.lost is None or self.lost.done():
            return
        site = "../third_party" if self.fmt.v < (0, 5, 0) else "/pytorch/third_party"
        line = 534 if self.fmt.v < (0, 5, 0) else 547
        exc = f"RuntimeError: [{site}/gloo/gloo/transport/tcp/pair.cc:{line}] Connection closed by peer {peer}"
        out: list[str] = []
        for rank in self.ranks:  # every scheduler on this node is in the broadcast
            out.append(self.fmt.sched("Scheduler hit an exception: Traceback (most recent call last):", rank.tp, rank.dp))
            out += [*_frames(*_loop_frames(self.overlap)), exc, ""]
        self.lost.set_result(out)

    def close(self) -> None:
        """Stop listening and drop the connections (the peers see EOF)."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for task in self._tasks:
            task.cancel()
