"""The exact commands relaunch runs on a host, as argv lists, and parsers for what they print.

Nothing here does I/O: `procs.py` runs these through `Host.run`. Every shell script below is a fixed
string; values (pids, paths, the server's argv) reach it only as positional parameters ("$1", "$@"),
so no user- or log-controlled text is ever interpreted as shell code. The server's environment is the
exception to the command line: it goes on standard input (env_input, each value shlex-quoted as data),
because every user of a host can read every command line in /proc. The SSH host quotes the whole argv
with shlex.join; the local host execs it without a shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Secret masking lives in core (discovery's messages need it too); re-exported for ops' callers.
from spectui.core.secrets import SECRET_WORDS, display_argv, redact_env  # noqa: F401

# The POSIX `kill` builtin (not /bin/kill, whose flavours differ) signalling one process group.
# "-$2" is a negative pid: the group. The caller has refused 0, 1 and its own group beforehand, because
# `kill -- -1` means "every process I may signal" and `kill -- -0` means "my own group".
_SIGNAL_GROUP = 'kill -s "$1" -- "-$2"'

# Where nvidia-smi is missing (no GPU, CPU sim) there is no GPU memory to wait for: exit 127 says so.
_GPU_APPS = (
    "command -v nvidia-smi >/dev/null 2>&1 || exit 127\n"
    "exec nvidia-smi --query-compute-apps=pid,used_memory --format=csv"
)

# Detached start: new session (setsid), SIGHUP ignored (nohup), exactly the given environment, in the old
# working directory, all output to a log file that must not exist yet. Prints the new pid: setsid does
# not fork because a background job of a non-interactive shell is never a process-group leader, so $! is
# the loader, which execs the server itself.
# - The environment never appears on a command line (any user can read /proc/*/cmdline): it comes on
#   standard input as `export NAME='value'` lines (env_input), is kept in a 0600 mktemp file, and the
#   loader — started by `env -i` with nothing — opens that file, removes it, sources it and execs the
#   server. dash is preferred as the loader: bash would add SHLVL to the environment.
# - The log is created and opened once (`set -C`: O_CREAT|O_EXCL, so neither an existing file nor a
#   planted symlink is followed) on fd 3, and the server writes to that descriptor: nothing can swap the
#   path between its creation and the server's first write.
_LOADER = 'exec 4<"$1" || exit 95; rm -f -- "$1"; shift; . /dev/fd/4; exec 4<&-; exec "$@"'
_START_DETACHED = """set -C
cd -- "$1" || { echo "spectui: cannot cd to $1" >&2; exit 96; }
log=$2
shift 2
for tool in setsid nohup env mktemp; do
  command -v "$tool" >/dev/null 2>&1 || { echo "spectui: $tool not found on this host" >&2; exit 97; }
done
envf=$(mktemp "${TMPDIR:-/tmp}/spectui-env.XXXXXXXX") || { echo "spectui: cannot create a private file" >&2; exit 99; }
cat >|"$envf" || { rm -f -- "$envf"; echo "spectui: cannot write $envf" >&2; exit 99; }
command exec 3>"$log" 2>/dev/null || { rm -f -- "$envf"; echo "spectui: cannot create $log (exists or not writable)" >&2; exit 98; }
loader=$(command -v dash || command -v sh)
setsid nohup env -i "$loader" -c '""" + _LOADER + """' sh "$envf" "$@" >&3 2>&1 3>&- </dev/null &
echo "$!"
"""

START_EXIT_REASONS = {96: "working directory missing", 97: "a needed tool is missing", 98: "log file not creatable",
                      99: "no private file for the environment"}
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHELL_ADDS = ("PWD", "OLDPWD", "SHLVL", "_")  # what a loader shell would add when the server had none


def check_pgid(pgid: int, *, own_pgids: Sequence[int] = ()) -> None:
    """Refuse process groups that would hit more than one server: 0/1 (everything) or our own."""
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}: that would hit more than the server")
    if pgid in own_pgids:
        raise ValueError(f"refusing to signal process group {pgid}: it is spectui's own")


def signal_group_argv(pgid: int, signal: str, *, own_pgids: Sequence[int] = ()) -> list[str]:
    check_pgid(pgid, own_pgids=own_pgids)
    if signal not in ("TERM", "KILL", "0"):
        raise ValueError(f"unexpected signal {signal!r}")
    return ["sh", "-c", _SIGNAL_GROUP, "sh", signal, str(pgid)]


def ps_argv() -> list[str]:
    """Every process: pid, ppid, pgid, state, args (the state tells zombies, which hold nothing, apart)."""
    return ["ps", "-e", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat=", "-o", "args="]


def listeners_argv() -> list[str]:
    """The kernel's TCP socket tables: universal on Linux, no ss/netstat/lsof needed."""
    return ["cat", "/proc/net/tcp", "/proc/net/tcp6"]


def gpu_apps_argv() -> list[str]:
    return ["sh", "-c", _GPU_APPS, "sh"]


def cmdline_argv(pid: int) -> list[str]:
    return ["cat", f"/proc/{int(pid)}/cmdline"]


def start_argv(cwd: str, log: str, env: Mapping[str, str], argv: Sequence[str]) -> list[str]:
    """The detached start of `argv`: no environment value in it (`env` goes on standard input as
    env_input(env)); `env` is only checked here."""
    if not argv:
        raise ValueError("empty command")
    env_input(env)
    return ["sh", "-c", _START_DETACHED, "sh", cwd, log, *argv]


def unpassable(env: Mapping[str, str]) -> list[str]:
    """Variable names a shell cannot set (bash's exported functions `BASH_FUNC_f%%`, names with dots):
    not passed on to a relaunched server (the plan says so)."""
    return [k for k in env if not _SHELL_NAME.fullmatch(k)]


def env_input(env: Mapping[str, str]) -> str:
    """Standard input of start_argv: `env` as shell assignments the loader sources (values quoted as
    data), after unsetting what the loader shell would otherwise add."""
    if any("\0" in v for v in env.values()):
        raise ValueError("an environment value holds a NUL byte: it cannot be passed on")
    lines = [f"unset {name}" for name in _SHELL_ADDS if name not in env]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items() if _SHELL_NAME.fullmatch(k)]
    return "".join(line + "\n" for line in lines)


def identity_argv() -> list[str]:
    """Who commands run as on the host, and how to run one as another user: uid, user name, then the
    paths of sudo and runuser where they exist."""
    return ["sh", "-c", "id -u; id -un; command -v sudo || echo; command -v runuser || echo", "sh"]


def owner_argv(path: str) -> list[str]:
    """The owner of a file: `UID NAME` (NAME is UNKNOWN for a uid without one)."""
    return ["stat", "-L", "-c", "%u %U", "--", path]


def as_user_prefix(user: str, *, sudo: bool, runuser: bool) -> list[str]:
    """argv prefix running a command as `user` through the host's own mechanism: `sudo -n -u` (never
    asks for a password), else (as root) `runuser -u`. ValueError when neither is there."""
    if not user or user.startswith("-") or any(ch.isspace() for ch in user):
        raise ValueError(f"user name {user!r} cannot be passed to sudo")
    if sudo:
        return ["sudo", "-n", "-u", user, "--"]
    if runuser:
        return ["runuser", "-u", user, "--"]
    raise ValueError("neither sudo nor runuser exists on the host")


@dataclass(frozen=True, slots=True)
class ProcEntry:
    pid: int
    ppid: int
    pgid: int
    stat: str
    args: str

    @property
    def alive(self) -> bool:
        return not self.stat.startswith("Z")  # a zombie has released its memory, ports and GPU


def parse_ps(text: str) -> list[ProcEntry]:
    out: list[ProcEntry] = []
    for line in text.splitlines():
        parts = line.split(None, 4)
        if len(parts) < 4 or not all(p.lstrip("-").isdigit() for p in parts[:3]):
            continue
        args = parts[4] if len(parts) > 4 else ""
        out.append(ProcEntry(int(parts[0]), int(parts[1]), int(parts[2]), parts[3], args))
    return out


def parse_listening_ports(text: str) -> dict[int, list[int]]:
    """/proc/net/tcp{,6} -> {port: [socket inode, …]} for sockets in LISTEN (state 0A)."""
    ports: dict[int, list[int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 10 or ":" not in parts[1] or parts[3] != "0A":
            continue
        try:
            port = int(parts[1].rsplit(":", 1)[1], 16)
            inode = int(parts[9])
        except ValueError:
            continue
        ports.setdefault(port, []).append(inode)
    return ports


@dataclass(frozen=True, slots=True)
class GpuApp:
    pid: int
    used_memory: str  # as printed: "4000 MiB"


def parse_gpu_apps(text: str) -> list[GpuApp]:
    """`nvidia-smi --query-compute-apps=pid,used_memory --format=csv`: a header, then "pid, mem" rows."""
    apps: list[GpuApp] = []
    for line in text.splitlines():
        pid_text, _, mem = line.partition(",")
        if pid_text.strip().isdigit():
            apps.append(GpuApp(int(pid_text.strip()), mem.strip()))
    return apps
