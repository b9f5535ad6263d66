"""The probe cadence and the shared prober (#29): the judge asks less when the server idles or its log
proves it alive, without judging later than `unhealthy_after` after the last sign of life; watchers of one
host share their questions (one command in flight for all, one `cat` for every pid over a real sshd)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from sshd_harness import Sshd  # noqa: E402

from spectui.sources import probeshare  # noqa: E402
from spectui.sources.liveness import Activity, HealthJudge, LivenessConfig, LivenessMonitor  # noqa: E402
from spectui.sources.local import LocalHost  # noqa: E402
from spectui.sources.ssh import SSHHost, SSHOptions  # noqa: E402

CFG = LivenessConfig()  # interval 1, calm 2, vouched 5, unhealthy after 10


def up_judge() -> HealthJudge:
    j = HealthJudge(CFG, 0.0, 42)
    j.process(0.0, "S")
    j.health(0.0, 200)
    return j


def test_cadence_follows_what_is_known_of_the_server() -> None:
    j = HealthJudge(CFG, 0.0, 42)
    assert j.cadence(0.0, Activity(phase="loading")) == 1.0  # starting: closely
    j = up_judge()
    assert j.cadence(1.0, Activity(running=0, queued=0)) == 2.0  # answering and idle
    assert j.cadence(1.0, Activity(running=2, queued=0)) == 1.0  # work in flight, no decode line: closely
    assert j.cadence(5.0, Activity(running=2, decode_at=3.0)) == 5.0  # fresh decode lines prove it alive
    assert j.cadence(20.0, Activity(running=2, decode_at=3.0)) == 1.0  # they stopped: closely again
    j.health(21.0, None, "timed out")
    assert j.cadence(21.0, Activity(running=0, decode_at=20.5)) == 1.0  # a failed probe: closely
    tight = HealthJudge(LivenessConfig(interval=0.5, unhealthy_after=3.0), 0.0)
    tight.process(0.0, "S")
    tight.health(0.0, 200)
    assert tight.cadence(0.5, Activity(decode_at=0.4)) == 1.5  # never more than half the verdict's delay


def test_decode_lines_stand_in_for_skipped_probes_but_not_for_a_failing_health() -> None:
    j = up_judge()
    for t in (2.0, 4.0, 6.0, 8.0, 10.0, 12.0):  # decoding; /health asked at 0 only (vouched cadence)
        j.vouch(t)
    assert j.judge(12.5, Activity(decode_at=12.0)).state == "healthy"  # 12.5 s since the last 200
    j.health(13.0, None, "timed out")  # it stopped answering at 12-13 (SIGSTOP): the log stopped too
    j.vouch(14.0)  # a decode line after a failed probe does not vouch (its HTTP side may be stuck)
    assert j.judge(21.9, Activity()).state == "healthy"  # 9.9 s since the last sign of life
    v = j.judge(22.0, Activity())
    assert v.state == "unhealthy" and v.reason == "no /health answer for 10 s (nor a decode line)"


def test_without_decode_lines_the_verdict_is_as_before() -> None:
    j = up_judge()
    j.health(2.0, None)
    assert j.judge(9.9, Activity()).state == "healthy"
    assert j.judge(10.0, Activity()).reason == "no /health answer for 10 s"


async def test_watchers_of_one_host_share_one_command_in_flight() -> None:
    hosts = [LocalHost(), LocalHost()]  # two tabs: two connections to the same machine
    ran: list[list[str]] = []
    for host in hosts:
        real = host.run

        async def counted(argv, real=real, **kw):  # type: ignore[no-untyped-def]
            ran.append(list(argv))
            return await real(argv, **kw)

        host.run = counted  # type: ignore[method-assign]
    shared = [probeshare.acquire(h) for h in hosts]
    try:
        assert shared[0] is shared[1]
        argv = ["sh", "-c", "sleep 0.3; echo $$"]
        (a, _), (b, age) = await asyncio.gather(shared[0].run(argv), shared[1].run(argv))
        assert len(ran) == 1 and a.stdout == b.stdout and a.stdout.strip().isdigit()
        c, age = await shared[1].run(argv, max_age=5.0)  # within the caller's cadence: the same answer
        assert len(ran) == 1 and c.stdout == a.stdout and 0 <= age < 5
        d, _ = await shared[1].run(argv, max_age=0.0)  # older than wanted: asked again
        assert len(ran) == 2 and d.stdout != a.stdout
    finally:
        for s, h in zip(shared, hosts, strict=True):
            await probeshare.release(s, h)
    assert probeshare.current(hosts[0]) is None  # the last watcher gone: nothing held


def ssh_host(sshd: Sshd) -> SSHHost:
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))


@pytest.mark.sshd
async def test_two_watchers_on_one_ssh_host_read_their_pids_in_one_command(sshd: Sshd) -> None:
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    hosts = [ssh_host(sshd), ssh_host(sshd)]
    ran: list[list[str]] = []
    try:
        for host in hosts:
            await host.connect()
            real = host.run

            async def counted(argv, real=real, **kw):  # type: ignore[no-untyped-def]
                ran.append(list(argv))
                return await real(argv, **kw)

            host.run = counted  # type: ignore[method-assign]
        cfg = LivenessConfig(interval=0.3)
        monitors = [LivenessMonitor(h, p.pid, None, config=cfg) for h, p in zip(hosts, procs, strict=True)]
        gens = [m.rounds() for m in monitors]
        for _ in range(4):
            await asyncio.gather(*(g.__anext__() for g in gens))
        assert all(m.judge.proc_state in ("S", "R") for m in monitors)  # each pid's own state
        stats = [a for a in ran if a[:1] == ["cat"]]
        # one read per round for both pids (each watcher alone: 8 reads); the first round may read each
        # pid alone (the second watcher registers while the first one's read is in flight)
        assert len(stats) <= 5 and sum(len(a) == 3 for a in stats) >= 3, stats
        procs[0].kill()
        procs[0].wait()
        verdicts = []
        for _ in range(4):
            verdicts = await asyncio.gather(*(g.__anext__() for g in gens))
            if verdicts[0] is not None:
                break
        assert verdicts[0] is not None and verdicts[0].state == "gone" and str(procs[0].pid) in verdicts[0].reason
        assert verdicts[1] is None or verdicts[1].state != "gone"  # the other one is not
        for g in gens:
            await g.aclose()
        assert probeshare.current(hosts[0]) is None
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for h in hosts:
            await h.close()
