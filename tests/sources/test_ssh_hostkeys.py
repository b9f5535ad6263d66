"""Host keys as OpenSSH checks them, against a real sshd, through every trust source: --known-hosts,
~/.ssh/known_hosts (a temp HOME), the config's UserKnownHostsFile / GlobalKnownHostsFile /
StrictHostKeyChecking, and a ProxyJump hop through the same sshd — unknown, accepted, changed."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_harness import Sshd, start_sshd

from spectui.errors import HostKeyError
from spectui.sources.ssh import SSHHost, SSHOptions

pytestmark = pytest.mark.sshd


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    s = start_sshd(tmp_path_factory.mktemp("sshd-keys"))  # its own: session counts are this module's
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    return h


def other_key_line(entry: str, tmp_path: Path) -> str:
    key = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return f"{entry} {' '.join(key.with_suffix('.pub').read_text().split()[:2])}\n"


def config(tmp_path: Path, server: Sshd, *extra: str, host: str = "box") -> Path:
    cfg = tmp_path / "ssh_config"
    lines = [f"Host {host}", "  HostName 127.0.0.1", f"  Port {server.port}", f"  User {server.user}",
             f"  IdentityFile {server.client_key}", *(f"  {e}" for e in extra)]
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


async def connects(host: SSHHost) -> bool:
    await host.connect()
    try:
        return (await host.run(["echo", "ok"])).stdout == "ok\n"
    finally:
        await host.close()


def entry(server: Sshd) -> str:
    return f"[127.0.0.1]:{server.port}"


async def test_home_known_hosts_unknown_accepted_changed(server: Sshd, home: Path, tmp_path: Path) -> None:
    kh = home / ".ssh" / "known_hosts"
    (home / ".ssh" / "config").write_text(config(tmp_path, server).read_text())  # ~/.ssh/config is read
    with pytest.raises(HostKeyError, match=rf"unknown host key .*SHA256:.*>> {kh}`$"):
        await SSHHost("box").connect()
    assert not kh.exists()
    assert await connects(SSHHost("box", options=SSHOptions(accept_new_host_key=True)))
    assert kh.read_text().startswith(f"{entry(server)} ssh-ed25519 ")
    assert await connects(SSHHost("box"))  # recorded: strict now passes
    kh.write_text(other_key_line(entry(server), tmp_path))
    before = kh.read_text()
    with pytest.raises(HostKeyError, match=rf"CHANGED.*`ssh-keygen -R '\[127.0.0.1\]:{server.port}' -f {kh}`"):
        await SSHHost("box", options=SSHOptions(accept_new_host_key=True)).connect()
    assert kh.read_text() == before  # a changed key is never written


async def test_cli_known_hosts_is_the_user_file(server: Sshd, home: Path, tmp_path: Path) -> None:
    cfg = config(tmp_path, server, "UserKnownHostsFile ~/cfg_known_hosts")
    kh = tmp_path / "cli_known_hosts"
    with pytest.raises(HostKeyError, match=f">> {kh}`"):
        await SSHHost("box", options=SSHOptions(str(cfg), known_hosts=str(kh))).connect()
    assert await connects(SSHHost("box", options=SSHOptions(str(cfg), known_hosts=str(kh),
                                                            accept_new_host_key=True)))
    assert kh.read_text().count("\n") == 1
    assert not (home / "cfg_known_hosts").exists() and not (home / ".ssh" / "known_hosts").exists()


async def test_config_user_known_hosts_file(server: Sshd, home: Path, tmp_path: Path) -> None:
    first, second = home / "kh_first", tmp_path / "kh_second"
    cfg = config(tmp_path, server, f"UserKnownHostsFile ~/kh_first {second}")
    opts = SSHOptions(str(cfg))
    # Neither file exists yet: an unknown key, not "No such file or directory ... retrying".
    with pytest.raises(HostKeyError, match=rf"unknown host key.*>> {first}`"):
        await SSHHost("box", options=opts).connect()
    assert await connects(SSHHost("box", options=SSHOptions(str(cfg), accept_new_host_key=True)))
    assert first.read_text().startswith(entry(server)) and not second.exists()
    assert not (home / ".ssh" / "known_hosts").exists()  # only the first UserKnownHostsFile in force
    # Trusted from the second file alone.
    second.write_text(first.read_text())
    first.unlink()
    assert await connects(SSHHost("box", options=opts))
    # Changed in the second: refused naming it, nothing written anywhere, even with accept-new.
    second.write_text(other_key_line(entry(server), tmp_path))
    with pytest.raises(HostKeyError, match=rf"CHANGED.*-f {second}`"):
        await SSHHost("box", options=SSHOptions(str(cfg), accept_new_host_key=True)).connect()
    assert not first.exists() and second.read_text().count("\n") == 1


async def test_global_known_hosts_file(server: Sshd, home: Path, tmp_path: Path) -> None:
    glob = tmp_path / "ssh_known_hosts"
    glob.write_text(f"{entry(server)} {server.host_pub}\n")
    cfg = config(tmp_path, server, f"GlobalKnownHostsFile {glob}")
    assert await connects(SSHHost("box", options=SSHOptions(str(cfg))))
    glob.write_text(other_key_line(entry(server), tmp_path))
    with pytest.raises(HostKeyError, match=rf"CHANGED.*-f {glob}`"):
        await SSHHost("box", options=SSHOptions(str(cfg), accept_new_host_key=True)).connect()
    assert not (home / ".ssh" / "known_hosts").exists()


@pytest.mark.parametrize(("value", "accepts"), [("yes", False), ("ask", False), ("accept-new", True),
                                                ("no", True)])
async def test_strict_host_key_checking_from_the_config(value: str, accepts: bool, server: Sshd, home: Path,
                                                        tmp_path: Path) -> None:
    kh = tmp_path / "kh"
    cfg = config(tmp_path, server, f"StrictHostKeyChecking {value}", f"UserKnownHostsFile {kh}")
    host = SSHHost("box", options=SSHOptions(str(cfg)))
    if accepts:
        assert await connects(host)
        assert kh.read_text().startswith(entry(server))
        kh.write_text(other_key_line(entry(server), tmp_path))  # and a changed key is still refused
        with pytest.raises(HostKeyError, match="CHANGED.*ssh-keygen -R"):
            await SSHHost("box", options=SSHOptions(str(cfg))).connect()
    else:
        with pytest.raises(HostKeyError, match="unknown host key"):
            await host.connect()
        assert not kh.exists()


async def test_proxy_jump_hop_uses_the_same_trust(server: Sshd, home: Path, tmp_path: Path) -> None:
    cfg = config(tmp_path, server, f"ProxyJump {server.user}@127.0.0.1:{server.port}", host="inner")
    kh = tmp_path / "jump_known_hosts"
    ids = (str(server.client_key),)
    with pytest.raises(HostKeyError, match=r"\(ProxyJump of inner\): unknown host key") as err:
        await SSHHost("inner", options=SSHOptions(str(cfg), ids, str(kh))).connect()
    assert "\n" not in str(err.value)
    host = SSHHost("inner", options=SSHOptions(str(cfg), ids, str(kh), accept_new_host_key=True))
    deadline = time.monotonic() + 10
    while server.session_pids() and time.monotonic() < deadline:  # earlier connections finish closing
        await asyncio.sleep(0.05)
    await host.connect()
    try:
        assert len(server.session_pids()) == 2  # the hop and the connection tunnelled through it
        assert len(host._jumps) == 1
        assert (await host.run(["echo", "ok"])).stdout == "ok\n"
    finally:
        await host.close()
    assert kh.read_text().count("\n") == 1  # one entry (the hop's), which then also trusts the target
    assert await connects(SSHHost("inner", options=SSHOptions(str(cfg), ids, str(kh))))
    kh.write_text(other_key_line(entry(server), tmp_path))
    with pytest.raises(HostKeyError, match=rf"ProxyJump of inner\): host key CHANGED.*-f {kh}`"):
        await SSHHost("inner", options=SSHOptions(str(cfg), ids, str(kh), accept_new_host_key=True)).connect()
    assert kh.read_text().count("\n") == 1
