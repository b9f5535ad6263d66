"""A real OpenSSH sshd on 127.0.0.1 for end-to-end tests: throwaway keys, known_hosts, session killing.

The harness starts `sshd -D` in its own process group (so stopping it signals only what it started) and
drops one client connection by SIGKILLing that connection's sshd child and its descendants, found by
walking PPid in /proc: that is how a network drop looks to the client. A `pyenv rehash` among them (root's
.bashrc on the development machine runs `pyenv init`) gets SIGTERM instead: its EXIT trap then releases the
lock file it holds in ~/.pyenv/shims. A SIGKILLed rehash leaves the lock, and every later `pip install`
through pyenv (CI's first step on that machine) waits 60 s on it and fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from spectui.commands.demo.simrun import free_port

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"


def sshd_available() -> bool:
    return os.path.exists(SSHD) and os.access(SSHD, os.X_OK)


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "spectui-test", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid:
            kids.append(int(entry))
    return kids


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _is_pyenv(pid: int) -> bool:
    return b"pyenv" in _cmdline(pid)


def _release_pyenv_lock(killed: list[int]) -> None:
    """A rehash signalled before its EXIT trap was set (the trap comes after the lock is taken) leaves the
    lock: once the signalled pyenv processes are gone and no rehash runs any more, remove it."""
    deadline = time.monotonic() + 3
    while any(os.path.exists(f"/proc/{pid}") for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.02)
    lock = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "shims" / ".pyenv-shim"
    if lock.exists() and not any(b"pyenv-rehash" in _cmdline(int(e)) for e in os.listdir("/proc") if e.isdigit()):
        lock.unlink(missing_ok=True)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = _children(p)
        out.extend(kids)
        todo.extend(kids)
    return out


@dataclass
class Sshd:
    """A running sshd: connect as `user`@127.0.0.1:`port` with `client_key`, trusting `known_hosts`."""

    root: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    host_pub: str
    proc: subprocess.Popen[bytes]

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def ssh_argv(self, *remote: str) -> list[str]:
        """Plain OpenSSH client argv with the same keys (baseline in bench/)."""
        return ["ssh", "-F", "/dev/null", "-i", str(self.client_key), "-p", str(self.port),
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes", f"{self.user}@127.0.0.1", *remote]

    def session_pids(self) -> list[int]:
        """Pids of the per-connection sshd children of the listener."""
        return _children(self.proc.pid)

    def kill_sessions(self) -> int:
        """SIGKILL every connection's sshd child and its descendants (SIGTERM for a `pyenv` script, so that
        it releases its lock); returns how many connections."""
        sessions = self.session_pids()
        pyenv = []
        for top in sessions:
            for pid in [top, *_descendants(top)]:
                if _is_pyenv(pid):
                    pyenv.append(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM if pid in pyenv else signal.SIGKILL)
        if pyenv:
            _release_pyenv_lock(pyenv)
        return len(sessions)

    def freeze_listener(self) -> None:
        """SIGSTOP the listening sshd: new connections hang before the banner (the link looks down),
        sessions already open are untouched. `thaw_listener()` lets them through."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw_listener(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def wait_sessions(self, n: int = 1, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.session_pids()) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {n} ssh session(s) within {timeout} s")
            time.sleep(0.02)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.thaw_listener()
        self.kill_sessions()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def start_sshd(root: Path, *, sftp: bool = True) -> Sshd:
    """Generate keys and config under `root`, start sshd on a free loopback port, wait until it accepts.

    `sftp=False`: no `Subsystem sftp` line, so the server refuses SFTP (exec still works), as on hosts
    whose admins removed it."""
    root.mkdir(parents=True, exist_ok=True)
    host_key, client_key = root / "host_ed25519", root / "client_ed25519"
    _keygen(host_key)
    _keygen(client_key)
    authorized = root / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    os.chmod(client_key, 0o600)
    port = free_port()
    sftp_server = SFTP_SERVER if os.path.exists(SFTP_SERVER) else "internal-sftp"
    subsystem = f"Subsystem sftp {sftp_server}\n" if sftp else ""
    config = root / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {root / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\nMaxSessions 64\nMaxStartups 64\n"
        f"LogLevel ERROR\n{subsystem}"
        # A session killed by a test (a dropped link) can die inside the login shell's `pyenv rehash`
        # (root's .bashrc here runs `pyenv init`) and leave its lock behind; every later session would wait
        # 60 s on it. Give up on the rehash at once instead: the test sessions never need new shims.
        "SetEnv PYENV_REHASH_TIMEOUT=0\n"
    )
    with contextlib.suppress(OSError):  # privilege-separation dir; not creatable (nor needed) as non-root
        os.makedirs("/run/sshd", exist_ok=True)
    proc = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(root / "sshd.log")],
                            stdin=subprocess.DEVNULL, start_new_session=True)
    host_pub = host_key.with_suffix(".pub").read_text().split()
    known = root / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    import pwd

    sshd = Sshd(root, port, pwd.getpwuid(os.getuid()).pw_name, client_key, known, " ".join(host_pub[:2]), proc)
    deadline = time.monotonic() + 10
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()[-500:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        if time.monotonic() > deadline:
            sshd.stop()
            raise RuntimeError("sshd did not start listening within 10 s")
        time.sleep(0.02)
    return sshd
