"""Multi-node / PD recognition from launch flags (spectui.ops.group.members), and the group tab's label and refusal."""

from __future__ import annotations

from spectui.core.launch import parse_command
from spectui.ops.group.members import group_label, group_targets, node_role, relaunch_refusal

BASE = "python -m sglang.launch_server --model-path /m/llama --tp 8"


def cmd(extra: str):
    return parse_command(f"{BASE} {extra}")


def test_roles_from_flags() -> None:
    assert node_role(cmd("")) is None
    assert node_role(None) is None
    r = node_role(cmd("--nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:5000"))
    assert r is not None and (r.nnodes, r.node_rank, r.pd_mode, r.key) == (2, 1, None, ("multinode", "10.0.0.1:5000"))
    r = node_role(cmd("--nnodes=4 --node-rank=3 --dist-init-addr=10.0.0.1:5000"))  # = form
    assert (r.nnodes, r.node_rank) == (4, 3) and r.describe == "node 3/4"
    r = node_role(cmd("--disaggregation-mode decode"))
    assert r.pd_mode == "decode" and r.key == ("pd", "/m/llama")
    assert node_role(cmd("--disaggregation-mode null")) is None
    assert node_role(cmd("--nnodes 1 --node-rank 0")) is None  # one node is an ordinary server
    assert node_role(["--nnodes", "2", "--dist-init-addr", "h:1"]).nnodes == 2  # bare argv words too


def test_grouping_keeps_order_and_picks_the_decode_printer() -> None:
    launches = [
        cmd("--nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:5000"),  # 0
        cmd(""),  # 1: its own tab
        cmd("--nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000"),  # 2
        None,  # 3: launch unknown: its own tab
        cmd("--disaggregation-mode prefill"),  # 4
        cmd("--disaggregation-mode decode"),  # 5
        cmd("--nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.9:5000"),  # 6: another server's address
    ]
    groups = group_targets(launches)
    assert [g.members for g in groups] == [(0, 2), (1,), (3,), (4, 5), (6,)]
    tp, plain, unknown, pd, half = groups
    assert tp.members[tp.primary] == 2  # node rank 0 prints the decode lines
    assert pd.members[pd.primary] == 5  # the decode side of PD
    assert not plain.is_group and not unknown.is_group and tp.is_group and half.is_group
    labels = [f"n{i}" for i in range(7)]
    assert group_label(labels, tp) == "n0+n2 [2 nodes]"
    assert group_label(labels, pd) == "n4+n5 [PD]"
    assert group_label(labels, plain) == "n1"
    assert relaunch_refusal(plain, labels) is None
    assert relaunch_refusal(tp, labels) is None and relaunch_refusal(pd, labels) is None  # every node: relaunched whole
    why = relaunch_refusal(half, labels)  # one node of two, alone
    assert "2 nodes group (n6)" in why and "missing node rank 1" in why and "connect them all" in why
    assert half.missing() == ["node rank 1"] and pd.missing() == []


def test_a_pd_side_spread_over_nodes_is_one_group_with_every_rank_expected() -> None:
    # SGLang's PD guide runs DeepSeek's prefill and decode sides each on --nnodes 2, each side with its own
    # --dist-init-addr: one PD deployment of four processes.
    pd = "--disaggregation-mode {mode} --nnodes 2 --node-rank {rank} --dist-init-addr {addr}"
    launches = [cmd(pd.format(mode="decode", rank=1, addr="10.0.1.1:5000")),  # 0
                cmd(pd.format(mode="prefill", rank=0, addr="10.0.0.1:5000")),  # 1
                cmd(pd.format(mode="decode", rank=0, addr="10.0.1.1:5000")),  # 2
                cmd(pd.format(mode="prefill", rank=1, addr="10.0.0.1:5000"))]  # 3
    (group,) = group_targets(launches)
    assert group.members == (0, 1, 2, 3) and group.kind == "PD" and group.missing() == []
    assert group.members[group.primary] == 2  # decode's node rank 0 prints the decode lines
    assert [r.describe for r in group.roles] == ["decode node 1/2", "prefill node 0/2", "decode node 0/2",
                                                 "prefill node 1/2"]
    (partial,) = group_targets(launches[:3])  # prefill's node 1 not connected
    assert partial.missing() == ["prefill node rank 1"]
    why = relaunch_refusal(partial, ["d1", "p0", "d0"])
    assert "PD group (d1, p0, d0)" in why and "missing prefill node rank 1" in why
