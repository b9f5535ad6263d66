"""A two-node SGLang server relaunched as one group, as an operator runs it: two simulated nodes (`--nnodes 2`,
node rank 0 hosts the rendezvous at `--dist-init-addr`, rank 1 joins it; started with `setsid nohup … &`),
`spectui relaunch NODE0 NODE1` over `local` and over a real OpenSSH sshd on 127.0.0.1: every node stopped,
then all started (rank 0 first) with the same edit and their own ranks; a failure restores both."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ops_simlab import SIM_FAST_ENV, SimLab, alive, free_port, proc_argv, wait_health

from spectui.ops.history import read_history

pytestmark = pytest.mark.timeout(240)
EAGLE = ["--model-path", "/models/llama-8b", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]


@dataclass
class Nodes:
    labs: list[SimLab]
    dist_port: int
    pids: list[int]

    def flags(self, rank: int) -> list[str]:
        return [*EAGLE, "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
                "--dist-init-addr", f"127.0.0.1:{self.dist_port}"]

    def start(self, env: dict[str, str] | None = None) -> None:
        # rank 1 first: it waits for rank 0's store, as on a real cluster where nodes start in any order
        for rank in (1, 0):
            self.pids[rank] = self.labs[rank].start(self.flags(rank), log=f"node{rank}.log",
                                                    env={**SIM_FAST_ENV, **(env or {})})
        for lab in self.labs:
            wait_health(lab.port, 60)

    def logs(self) -> list[Path]:
        return [lab.root / f"node{r}.log" for r, lab in enumerate(self.labs)]


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nodes]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    labs = []
    for r in range(2):
        (tmp_path / f"node{r}").mkdir()
        labs.append(SimLab(tmp_path / f"node{r}", free_port()))
    n = Nodes(labs, free_port(), [0, 0])
    try:
        yield n
    finally:
        for lab in labs:
            lab.cleanup()


def relaunch(targets: list[str], *extra: str, ssh: list[str] = ()) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "spectui.cli", "relaunch", *targets, *ssh, "--yes", "--json",
            "--stop-timeout", "10", "--health-timeout", "90", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=200)


def with_flag(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(item.partition("=")[::2] for item in raw.split("\0") if item)


@pytest.fixture(params=["local", "ssh"])
def where(request: pytest.FixtureRequest) -> tuple[str, list[str]]:
    if request.param == "local":
        return "local", []
    sshd = request.getfixturevalue("sshd")
    return sshd.target, ["--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]


def test_both_nodes_are_stopped_then_started_rank0_first_with_the_edit(nodes: Nodes, where) -> None:
    host, ssh = where
    nodes.start()
    old_argv = [proc_argv(p) for p in nodes.pids]
    done = relaunch([f"{host}:{log}" for log in nodes.logs()], "--set", "speculative-num-steps=5", ssh=ssh)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["healthy"] is True and out["rolled_back"] is False and out["group"] == "2 nodes"
    members = out["members"]
    assert [m["node"] for m in members] == ["node 0/2", "node 1/2"]
    for rank, m in enumerate(members):
        assert m["old_pid"] == nodes.pids[rank] and not alive(nodes.pids[rank])
        assert alive(m["new_pid"]) and m["healthy"]
        # the same edit on each node; each keeps its own --node-rank, port and working directory
        assert proc_argv(m["new_pid"]) == with_flag(old_argv[rank], "--speculative-num-steps", "5")
        assert Path(m["log"]).parent == nodes.labs[rank].root
        assert Path(f"/proc/{m['new_pid']}/cwd").resolve() == nodes.labs[rank].root
    for lab in nodes.labs:
        wait_health(lab.port, 30)
    assert out["new_pid"] == members[0]["new_pid"] and out["log"] == members[0]["log"]  # the primary: rank 0
    # stopped all, then started: every stop step comes before the first start, and rank 0 starts first
    steps = [ln for ln in done.stderr.splitlines() if ln.startswith("[")]
    starts = [i for i, ln in enumerate(steps) if ln.startswith("[starting]")]
    stops = [i for i, ln in enumerate(steps) if ln.startswith("[stopping]")]
    assert len(starts) == 2 and len(stops) == 2 and max(stops) < min(starts)
    assert "node0.log" in steps[starts[0]] or str(nodes.logs()[0]) in steps[starts[0]]
    hist = read_history()
    assert len(hist) == 2 and {h.outcome for h in hist} == {"healthy"}
    assert len({h.group for h in hist}) == 1 and hist[0].group
    assert sorted(h.node for h in hist) == ["node 0/2", "node 1/2"]


def test_a_failed_group_launch_restores_the_previous_command_on_every_node(nodes: Nodes) -> None:
    nodes.start()
    old_argv = [proc_argv(p) for p in nodes.pids]
    targets = [f"local:{log}" for log in nodes.logs()]
    done = relaunch(targets, "--set", "speculative-num-steps=5", "--set-env", "SPECTUI_SIM_FAULT=oom-at-capture")
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["healthy"] is False and out["rolled_back"] is True
    assert "rolled back" in out["message"]
    for rank, m in enumerate(out["members"]):
        back = m["rollback"]
        assert back["healthy"] and alive(back["pid"])
        assert proc_argv(back["pid"]) == old_argv[rank]  # the previous command, exactly
        assert "SPECTUI_SIM_FAULT" not in environ(back["pid"])  # and its environment as it was
        assert m["new_pid"] is None or not alive(m["new_pid"])
    for lab in nodes.labs:
        wait_health(lab.port, 30)
    assert {h.outcome for h in read_history()} == {"rolled_back"}


def test_refusals_change_nothing(nodes: Nodes) -> None:
    nodes.start()
    logs = [f"local:{log}" for log in nodes.logs()]
    # one node alone is not relaunched as a group: the JSON-free CLI says why
    shape = relaunch(logs, "--set", "node-rank=1")
    assert shape.returncode != 0 and "shape" in shape.stderr
    alone = relaunch([logs[0], logs[0]])
    assert alone.returncode != 0 and "missing node rank 1" in alone.stderr
    dry = relaunch(logs, "--set", "speculative-num-steps=5", "--dry-run")  # the plan of every node, as JSON
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["dry_run"] is True and plan["group"] == "2 nodes" and plan["healthy"] is None
    assert [m["old_pid"] for m in plan["members"]] == nodes.pids
    assert all({"flag": "--speculative-num-steps", "old": "3", "new": "5"} in m["diff"] for m in plan["members"])
    assert all(alive(p) for p in nodes.pids)
    assert read_history() == []


def test_a_pd_pair_is_relaunched_together_prefill_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    labs, logs = [], []
    try:
        for mode in ("decode", "prefill"):  # given decode first: the plan still starts prefill first
            (tmp_path / mode).mkdir()
            lab = SimLab(tmp_path / mode, free_port())
            lab.start([*EAGLE, "--disaggregation-mode", mode], log=f"{mode}.log", env=SIM_FAST_ENV)
            labs.append(lab)
            logs.append(f"local:{lab.root / f'{mode}.log'}")
        for lab in labs:
            wait_health(lab.port, 60)
        done = relaunch(logs, "--set", "speculative-num-steps=5")
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["group"] == "PD" and out["healthy"] and [m["node"] for m in out["members"]] == ["decode", "prefill"]
        assert out["log"] == out["members"][0]["log"]  # the decode side is the primary
        starts = [ln for ln in done.stderr.splitlines() if ln.startswith("[starting]")]
        assert len(starts) == 2 and "prefill" in starts[0] and "decode" in starts[1]
        for m in out["members"]:
            argv = proc_argv(m["new_pid"])
            assert alive(m["new_pid"]) and argv[argv.index("--speculative-num-steps") + 1] == "5"
    finally:
        for lab in labs:
            lab.cleanup()


async def test_a_member_already_being_relaunched_or_read_only_refuses_the_group_and_changes_nothing(nodes: Nodes,
                                                                                                  tmp_path: Path) -> None:
    from spectui.errors import RelaunchError
    from spectui.ops.group.relaunch import GroupMember, execute_group, prepare_group
    from spectui.ops.history import HistoryStore
    from spectui.ops.relaunch.plan import Edits
    from spectui.ops.relaunch.run import relaunch_lock
    from spectui.sources.local import LocalHost

    nodes.start()
    edits = Edits(sets=(("speculative-num-steps", "5"),))
    store = HistoryStore(tmp_path / "h" / "history.jsonl")

    def members(read_only: bool = False) -> list[GroupMember]:
        return [GroupMember(LocalHost(read_only=read_only and r == 1), f"node{r}", None, str(log))
                for r, log in enumerate(nodes.logs())]

    gplan = await prepare_group(members(), edits)
    with relaunch_lock(gplan.plans[1], store.path.parent / "locks"), pytest.raises(RelaunchError, match="already running"):
        await execute_group(gplan, history=store)  # node 1 is being relaunched by someone else
    ro = await prepare_group(members(read_only=True), edits)
    with pytest.raises(RelaunchError, match="read-only"):
        await execute_group(ro, history=store)  # node 1's pre-flight refuses: node 0 is not touched either
    assert all(alive(p) for p in nodes.pids)
    assert store.read() == []  # nothing was started, so nothing was recorded


def test_a_node_whose_health_server_never_answers_is_up_once_node0_is_healthy(nodes: Nodes) -> None:
    """sgl-project/sglang#12297: on some releases a node >= 1 logs its dummy health server but its port refuses
    connections (the simulator's `no-dummy-health` fault); node 0's health proves every rank joined and loaded."""
    nodes.start()
    targets = [f"local:{log}" for log in nodes.logs()]
    done = relaunch(targets, "--set", "speculative-num-steps=5", "--set-env", "SPECTUI_SIM_FAULT=no-dummy-health",
                    "--peer-grace", "3")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["healthy"] is True and out["rolled_back"] is False
    node1 = out["members"][1]
    assert alive(node1["new_pid"]) and "never answered" in done.stderr
    assert "Dummy health check server scheduled on existing loop" in Path(node1["log"]).read_text()
    wait_health(nodes.labs[0].port, 30)  # node 0 serves


def test_a_pd_deployment_whose_prefill_side_spans_two_nodes_is_relaunched_whole(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """PD where the prefill server is itself a two-node server (its own --dist-init-addr) and decode one node.
    Prefill's node 1 never answers /health (sgl-project/sglang#12297): it is judged against prefill's own
    node 0, not against decode, and taken as up once that is healthy."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    dist = free_port()
    roles = [("decode", None), ("prefill", 0), ("prefill", 1)]  # given in no particular order
    labs, targets = [], []
    try:
        for mode, rank in roles:
            name = mode if rank is None else f"{mode}{rank}"
            (tmp_path / name).mkdir()
            lab = SimLab(tmp_path / name, free_port())
            flags = [*EAGLE, "--disaggregation-mode", mode]
            if rank is not None:
                flags += ["--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
                          "--dist-init-addr", f"127.0.0.1:{dist}"]
            lab.start(flags, log=f"{name}.log", env=SIM_FAST_ENV)
            labs.append(lab)
            targets.append(f"local:{lab.root / f'{name}.log'}")
        for lab in labs:
            wait_health(lab.port, 60)
        done = relaunch(targets, "--set", "speculative-num-steps=5", "--set-env", "SPECTUI_SIM_FAULT=no-dummy-health",
                        "--peer-grace", "3")
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["group"] == "PD" and out["healthy"] is True and out["rolled_back"] is False
        assert [m["node"] for m in out["members"]] == ["decode", "prefill node 0/2", "prefill node 1/2"]
        starts = [ln for ln in done.stderr.splitlines() if ln.startswith("[starting]")]
        assert len(starts) == 3 and "prefill0.log" in starts[0] and "prefill1.log" in starts[1]
        assert "decode.log" in starts[2]
        assert "never answered" in done.stderr  # prefill's node 1, after prefill's node 0 was healthy
        for m in out["members"]:
            argv = proc_argv(m["new_pid"])
            assert alive(m["new_pid"]) and argv[argv.index("--speculative-num-steps") + 1] == "5"
        assert "TP1] Init torch distributed ends" in Path(out["members"][2]["log"]).read_text()  # it joined node 0
        wait_health(labs[0].port, 30)
    finally:
        for lab in labs:
            lab.cleanup()
