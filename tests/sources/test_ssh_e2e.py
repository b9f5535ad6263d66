"""End to end against a real OpenSSH sshd on 127.0.0.1: host keys, errors, and a tail that survives
two killed connections and a rotation with every line exactly once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sshd_harness import Sshd
from tailhelp import Collected, running, wait_for

from spectui.errors import AuthError, ConnectError, HostKeyError
from spectui.sources.base import ConnState
from spectui.sources.ssh import SSHHost, SSHOptions
from spectui.sources.tail import LogTail

pytestmark = pytest.mark.sshd


def host_for(sshd: Sshd, **kw: object) -> SSHHost:
    opts = {"ssh_config": "/dev/null", "identities": (str(sshd.client_key),), "known_hosts": str(sshd.known_hosts)}
    opts.update(kw)
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port, options=SSHOptions(**opts))  # type: ignore[arg-type]


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


async def test_tail_survives_two_killed_sessions_and_a_rotation(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    host = host_for(sshd)
    await host.connect()
    out = Collected()
    expected: list[str] = []

    def write(tag: str, n: int) -> None:
        for i in range(n):
            append(log, f"{tag} line {i}\n")
            expected.append(f"{tag} line {i}")

    def reconnected(k: int):  # type: ignore[no-untyped-def]
        return lambda o: sum(s.state is ConnState.RECONNECTING for s in o.states) >= k and \
            o.states[-1].state is ConnState.CONNECTED

    try:
        async with running(LogTail(host, str(log), from_start=True), out):
            await wait_for(out, lambda o: any(s.state is ConnState.CONNECTED for s in o.states))
            write("a", 300)
            append(log, "held partial ")  # a line cut by the drop: must come out once, whole
            await wait_for(out, lambda o: len(o.lines) == 300)
            assert sshd.kill_sessions() >= 1
            append(log, "line\n")
            expected.append("held partial line")
            write("b", 300)  # written while the connection is down
            await wait_for(out, reconnected(1))
            await wait_for(out, lambda o: len(o.lines) == len(expected))
            os.rename(log, tmp_path / "server.log.1")
            write("c", 300)
            await wait_for(out, lambda o: len(o.lines) == len(expected))
            assert sshd.kill_sessions() >= 1
            write("d", 300)
            await wait_for(out, reconnected(2))
            await wait_for(out, lambda o: len(o.lines) == len(expected))
    finally:
        await host.close()
    assert out.lines == expected
    assert sum(s.rotated for s in out.states) == 1


async def test_unknown_host_key_is_refused_with_fingerprint_then_accepted_on_request(
    sshd: Sshd, tmp_path: Path
) -> None:
    kh = tmp_path / "known_hosts"
    with pytest.raises(HostKeyError) as err:
        await host_for(sshd, known_hosts=str(kh)).connect()
    msg = str(err.value)
    assert "SHA256:" in msg and "--accept-new-host-key" in msg and f"ssh-keyscan -p {sshd.port} 127.0.0.1" in msg
    assert "\n" not in msg
    host = host_for(sshd, known_hosts=str(kh), accept_new_host_key=True)
    await host.connect()
    assert (await host.run(["echo", "ok"])).stdout == "ok\n"
    await host.close()
    assert kh.read_text().startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")
    # Recorded: a strict connection now works without the flag.
    strict = host_for(sshd, known_hosts=str(kh))
    await strict.connect()
    await strict.close()


async def test_changed_host_key_is_refused_even_with_accept_new(sshd: Sshd, tmp_path: Path) -> None:
    other = tmp_path / "other"
    os.system(f"ssh-keygen -q -t ed25519 -N '' -f {other}")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    with pytest.raises(HostKeyError, match="CHANGED.*ssh-keygen -R"):
        await host_for(sshd, known_hosts=str(kh), accept_new_host_key=True).connect()


async def test_wrong_key_and_host_down_are_one_line_errors(sshd: Sshd, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    os.system(f"ssh-keygen -q -t ed25519 -N '' -f {wrong}")
    with pytest.raises(AuthError, match="permission denied.*-i FILE"):
        await host_for(sshd, identities=(str(wrong),)).connect()
    down = SSHHost("127.0.0.1", port=1, options=SSHOptions(ssh_config="/dev/null"))
    with pytest.raises(ConnectError, match="refused"):
        await down.connect()


async def test_run_stat_read_and_missing_file(sshd: Sshd, tmp_path: Path) -> None:
    f = tmp_path / "data.txt"
    f.write_bytes(b"0123456789")
    host = host_for(sshd)
    await host.connect()
    try:
        res = await host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        assert (res.exit_status, res.stdout) == (3, "out\n")
        # The remote login shell runs root's .bashrc first; here that is `pyenv init`, whose rehash warns on
        # stderr when another session holds its lock (two test workers). The command's own stderr follows.
        *rc_noise, own = res.stderr.splitlines(keepends=True)
        assert own == "err\n" and all("pyenv" in line for line in rc_noise), res.stderr
        assert (await host.run(["echo", "a b; $HOME"])).stdout == "a b; $HOME\n"  # argv is quoted
        st = await host.stat(str(f))
        assert st is not None and st.size == 10 and st.inode == os.stat(f).st_ino
        assert await host.stat(str(tmp_path / "nope")) is None
        assert await host.read_range(str(f), 3, 4) == b"3456"
        with pytest.raises(FileNotFoundError):
            await host.open(str(tmp_path / "nope"))
    finally:
        await host.close()


async def test_ssh_config_alias_hostname_port_user_identity(sshd: Sshd, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host gpubox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
                   f"  IdentityFile {sshd.client_key}\n")
    kh = tmp_path / "known_hosts"
    alias = SSHHost("gpubox", options=SSHOptions(ssh_config=str(cfg), known_hosts=str(kh)))
    with pytest.raises(HostKeyError, match=f"ssh-keyscan -p {sshd.port} 127.0.0.1 "):
        await alias.connect()  # the key is looked up and recorded under the real HostName and Port
    accepting = SSHHost("gpubox", options=SSHOptions(ssh_config=str(cfg), known_hosts=str(kh),
                                                     accept_new_host_key=True))
    await accepting.connect()
    try:
        assert (await accepting.run(["id", "-un"])).stdout.strip() == sshd.user
    finally:
        await accepting.close()
    assert kh.read_text().startswith(f"[127.0.0.1]:{sshd.port} ")
