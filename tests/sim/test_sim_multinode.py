"""Multi-node launches (--nnodes 2) on one machine: two real simulator processes on different --port values
sharing --dist-init-addr 127.0.0.1:P. Rendezvous, node roles, a lost peer, SIGTERM, and the timeouts."""

from __future__ import annotations

import os
import signal
import socket
import time

import httpx

from spectui.commands.demo.simrun import free_port
from tests.sim.conftest import TARGET, Sim

ENV = {"SPECTUI_SIM_TIME_SCALE": "40", "SPECTUI_SIM_TRAFFIC": "4"}  # traffic: only node 0 may serve it
LOST = "Connection closed by peer"
FIRED = "The server is fired up and ready to roll!"


def _flags(dist_port: int, rank: int, *extra: str) -> list[str]:
    return [*TARGET, "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
            "--dist-init-addr", f"127.0.0.1:{dist_port}", *extra]


def _status(sim: Sim, path: str) -> int | None:
    try:
        return httpx.get(sim.url + path, timeout=2).status_code
    except httpx.HTTPError:
        return None


def _wait_status(sim: Sim, path: str = "/health", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while _status(sim, path) != 200:
        if sim.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{sim.url}{path} never answered 200:\n{sim.text()[-3000:]}")
        time.sleep(0.05)


def _free(port: int) -> bool:
    """Nothing listens on the port and a server could bind it again (with SO_REUSEADDR, as every server does)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _group_gone(sim: Sim) -> bool:
    try:
        os.killpg(sim.proc.pid, 0)
    except ProcessLookupError:
        return True
    return False


def _pair(sim_factory, *, rank1_first: bool = False) -> tuple[Sim, Sim, int]:
    dist = free_port()
    start = [(1, "rank1.log"), (0, "rank0.log")] if rank1_first else [(0, "rank0.log"), (1, "rank1.log")]
    sims = {rank: sim_factory(_flags(dist, rank), name, env=ENV) for rank, name in start}
    sims[0].wait_ready(30)
    _wait_status(sims[1])
    return sims[0], sims[1], dist


def test_rank0_waits_for_rank1_then_each_plays_its_role_and_a_lost_peer_kills_rank0(sim_factory) -> None:
    dist = free_port()
    r0 = sim_factory(_flags(dist, 0), "rank0.log", env=ENV)
    r0.wait_for("Init torch distributed begin.", 30)
    time.sleep(1.0)  # 40 simulated seconds: start-up would be long over on one node
    assert _status(r0, "/health") is None  # the port is bound, not listening: refused
    assert "Init torch distributed ends" not in r0.text() and "Load weight begin" not in r0.text()

    r1 = sim_factory(_flags(dist, 1), "rank1.log", env=ENV)
    r0.wait_ready(30)
    _wait_status(r1)
    assert _status(r0, "/health") == 200 and _status(r0, "/v1/models") == 200
    assert _status(r1, "/health_generate") == 200
    assert _status(r1, "/v1/models") == 404 and _status(r1, "/get_server_info") == 404
    assert "TP0] Init torch distributed ends" in r0.text()
    assert "TP1] Init torch distributed ends" in r1.text()

    r0.wait_for("Decode batch", 30)
    time.sleep(0.3)
    text1 = r1.text()
    assert "Starting dummy health check server at 127.0.0.1:" in text1
    assert "Decode batch" not in text1 and "Prefill batch" not in text1 and FIRED not in text1
    assert "POST /v1/chat/completions" not in text1  # no built-in traffic on a scheduler-only node

    os.killpg(r1.proc.pid, signal.SIGKILL)
    assert r0.proc.wait(10) == -signal.SIGKILL  # kill_process_tree on itself, like SGLang
    text0 = r0.text()
    assert "TP0] Scheduler hit an exception: Traceback (most recent call last):" in text0
    assert f"/gloo/transport/tcp/pair.cc:547] {LOST} [127.0.0.1]:" in text0
    assert text0.rstrip().endswith("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    r1.proc.wait(10)
    assert all(_free(p) for p in (r0.port, r1.port, dist))


def test_sigterm_to_rank0_stops_it_cleanly_and_rank1_follows(sim_factory) -> None:
    r0, r1, dist = _pair(sim_factory, rank1_first=True)  # a client retries until the store listens
    os.killpg(r0.proc.pid, signal.SIGTERM)
    assert r0.proc.wait(10) == 0
    assert r1.proc.wait(10) == -signal.SIGKILL
    assert "Traceback" not in r0.text()  # a clean stop: the store's peer handler ends quietly (no asyncio noise)
    text1 = r1.text()
    assert "TP1] Scheduler hit an exception: Traceback (most recent call last):" in text1 and LOST in text1
    # a node >= 1 has no tokenizer manager: its SIGQUIT handler is still the launch-phase one
    assert text1.rstrip().endswith("Received sigquit from a child process. It usually means the child failed.")
    assert _group_gone(r0) and _group_gone(r1)
    assert all(_free(p) for p in (r0.port, r1.port, dist))


def test_sigterm_to_each_node_leaves_no_process_and_frees_the_ports(sim_factory) -> None:
    r0, r1, dist = _pair(sim_factory)
    for sim in (r1, r0):  # a relaunch tool stops each node's process group
        os.killpg(sim.proc.pid, signal.SIGTERM)
    codes = {r0.proc.wait(10), r1.proc.wait(10)}
    assert codes <= {0, -signal.SIGKILL}  # the slower one may see its peer go first
    assert _group_gone(r0) and _group_gone(r1)
    assert all(_free(p) for p in (r0.port, r1.port, dist))


def test_dist_timeout_with_rank1_never_started_fails_rank0(sim_factory) -> None:
    dist = free_port()
    t0 = time.monotonic()
    r0 = sim_factory(_flags(dist, 0, "--dist-timeout", "2"), "rank0.log", env=ENV)
    assert r0.proc.wait(20) == -signal.SIGKILL
    assert time.monotonic() - t0 >= 2.5  # wall clock: --dist-timeout is not divided by the time scale
    text = r0.text()
    assert "TP0] Scheduler hit an exception: Traceback (most recent call last):" in text
    assert ("torch.distributed.DistStoreError: Timed out after 3 seconds waiting for clients. 1/2 clients joined."
            in text)
    assert text.rstrip().endswith("Received sigquit from a child process. It usually means the child failed.")
    assert FIRED not in text and "Load weight begin" not in text
    assert _free(dist) and _free(r0.port)


def test_client_timeout_with_rank0_never_started_fails_rank1(sim_factory) -> None:
    dist = free_port()
    r1 = sim_factory(_flags(dist, 1, "--dist-timeout", "1"), "rank1.log", env=ENV)
    assert r1.proc.wait(20) == -signal.SIGKILL
    msg = f"The client socket has timed out after 1000ms while trying to connect to (127.0.0.1, {dist})."
    text = r1.text()
    assert f"socket.cpp:1028] [c10d] {msg}" in text
    assert f"torch.distributed.DistNetworkError: {msg}" in text
    assert "Starting dummy health check server" not in text and _free(r1.port)
