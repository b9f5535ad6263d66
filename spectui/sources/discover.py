"""Find SGLang servers on a host by reading /proc there, in one remote command for all processes.

A server is a main process started as `python -m sglang.launch_server`, `sglang serve`, or the simulator
`python -m spectui.sim` (discoverable the same way, so the demo and tests exercise this path). Children
SGLang renames `sglang::scheduler…`, `sglang::detokenizer` (docs/REFERENCE.md §6) and any process whose parent is
itself a server are not separate servers; the `docker run` client is not the server (the containerised
process is, when /proc shows it).
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Mapping, Sequence

from spectui.core.launch import flag_value  # the one reader (argparse's rules); callers may import it here
from spectui.core.secrets import display_argv
from spectui.errors import DiscoveryError
from spectui.sources.base import Host, ServerProcess

DEFAULT_PORT = 30000
_MODULES = ("sglang.launch_server", "spectui.sim")
_CLIENTS = {"docker", "podman", "nerdctl", "kubectl", "ssh"}

# One command for the whole host: grep finds candidate cmdlines; per candidate it prints stat, argv,
# environ, cwd, the fd 1/2 targets and the owner (effective uid and its name) between markers no process
# can forge (random per call).
_SCRIPT = r"""
M="$1"
for f in $(grep -l -a -e sglang -e spectui.sim /proc/[0-9]*/cmdline 2>/dev/null); do
  d=${f%/cmdline}
  printf '%s PID %s\n' "$M" "${d#/proc/}"
  printf '%s STAT\n' "$M"; cat "$d/stat" 2>/dev/null
  printf '\n%s ARGV\n' "$M"; cat "$d/cmdline" 2>/dev/null
  printf '\n%s ENV\n' "$M"; cat "$d/environ" 2>/dev/null
  printf '\n%s CWD\n' "$M"; readlink "$d/cwd" 2>/dev/null
  printf '\n%s FD1\n' "$M"; readlink "$d/fd/1" 2>/dev/null
  printf '\n%s FD2\n' "$M"; readlink "$d/fd/2" 2>/dev/null
  u=$(sed -n 's/^Uid:[[:space:]]*[0-9]*[[:space:]]*\([0-9]*\).*/\1/p' "$d/status" 2>/dev/null)
  printf '\n%s UID\n%s\n%s USER\n' "$M" "$u" "$M"; [ -n "$u" ] && id -nu "$u" 2>/dev/null
  printf '\n'
done
"""


def program_of(argv: Sequence[str]) -> str | None:
    """"python -m sglang.launch_server" / "sglang serve" / "python -m spectui.sim", or None."""
    if not argv or argv[0].startswith("sglang::") or os.path.basename(argv[0]) in _CLIENTS:
        return None
    exe = os.path.basename(argv[0])
    if exe == "sglang" and argv[1:2] == ["serve"]:
        return "sglang serve"
    if not exe.startswith("python"):
        return None  # `bash -c "python -m sglang…"` is a wrapper: its python child is the server
    for i, word in enumerate(argv[1:-1], start=1):
        if word == "-m" and argv[i + 1] in _MODULES:
            return f"{exe} -m {argv[i + 1]}"
        if word.startswith("-") and word not in ("-u", "-O", "-OO", "-B", "-E", "-s", "-S", "-X", "-W", "-P", "-I"):
            break  # `python -c …` and friends: whatever follows is not the interpreter's -m
        if os.path.basename(word) == "sglang" and argv[i + 1] == "serve":
            return "sglang serve"
        if word.endswith("sglang/launch_server.py"):
            return f"{exe} {word}"
        if not word.startswith("-") and argv[i - 1] not in ("-X", "-W"):
            break  # the script: what follows are its own arguments
    return None


def server_api_key(argv: Sequence[str]) -> str | None:
    """The server's own `--api-key` (SGLang then refuses every request but /health and /metrics without
    `Authorization: Bearer KEY`): spectui's probes and load send it; it is masked wherever shown."""
    return flag_value(argv, "--api-key")


def _argv(cmdline: str) -> tuple[str, ...]:
    """/proc/PID/cmdline as argv: NUL-terminated words, empty ones kept (`--x ""` keeps its meaning on a
    relaunch, and matches what a relaunch's pre-check reads back)."""
    if not cmdline:
        return ()
    return tuple(cmdline.removesuffix("\0").split("\0"))


def _file_target(link: str) -> str | None:
    if not link.startswith("/") or link.startswith(("/dev/", "/proc/")):
        return None  # a tty, pipe, socket or /dev/null is not a log file
    return link


def _gpu_ids(env: Mapping[str, str]) -> tuple[int, ...]:
    ids = []
    for part in env.get("CUDA_VISIBLE_DEVICES", "").split(","):
        if part.strip().isdigit():
            ids.append(int(part))
    return tuple(ids)


def parse_proc_dump(text: str, marker: str) -> list[ServerProcess]:
    """The script's output -> servers (children and non-servers dropped)."""
    found: dict[int, tuple[int, ServerProcess]] = {}
    for block in text.split(f"{marker} PID ")[1:]:
        pid_text, _, rest = block.partition("\n")
        parts = dict(_sections(rest, marker))
        argv = _argv(parts.get("ARGV", ""))
        program = program_of(argv)
        stat = parts.get("STAT", "")
        if program is None or ")" not in stat:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ppid, pgid = int(fields[1]), int(fields[2])
        env = dict(e.split("=", 1) for e in parts.get("ENV", "").split("\0") if "=" in e)
        fd1, fd2 = _file_target(parts.get("FD1", "").strip()), _file_target(parts.get("FD2", "").strip())
        port_text = flag_value(argv, "--port")
        host_addr = flag_value(argv, "--host") or "127.0.0.1"
        proc = ServerProcess(
            pid=int(pid_text),
            pgid=pgid,
            argv=argv,
            env=env,
            cwd=parts.get("CWD", "").strip(),
            log_path=fd2 or fd1,  # SGLang logs through `logging` (stderr); stdout when only it is a file
            port=int(port_text) if port_text and port_text.isdigit() else DEFAULT_PORT,
            host_addr="127.0.0.1" if host_addr in ("0.0.0.0", "::", "") else host_addr,
            gpu_ids=_gpu_ids(env),
            stderr_path=fd2 if fd2 != fd1 else None,
            program=program,
            uid=int(parts["UID"].strip()) if parts.get("UID", "").strip().isdigit() else None,
            user=parts.get("USER", "").strip(),
        )
        found[proc.pid] = (ppid, proc)
    return sorted((p for ppid, p in found.values() if ppid not in found), key=lambda p: p.pid)


def _sections(rest: str, marker: str) -> list[tuple[str, str]]:
    out = []
    for chunk in rest.split(f"{marker} ")[1:]:
        name, _, body = chunk.partition("\n")
        out.append((name.strip(), body.removesuffix("\n")))
    return out


async def discover(host: Host) -> list[ServerProcess]:
    """Every SGLang server on the host, by pid."""
    marker = "@@spectui-" + secrets.token_hex(8)
    res = await host.run(["sh", "-c", _SCRIPT, "sh", marker], timeout=30)
    return parse_proc_dump(res.stdout, marker)


class SeveralServers(DiscoveryError):
    """More than one server and no --pid: `servers` lets a command list them."""

    def __init__(self, message: str, servers: list[ServerProcess]) -> None:
        super().__init__(message)
        self.servers = servers


def describe(proc: ServerProcess, command: str | None = None) -> str:
    """One line for a listing: pid, port, log, command (`command`: the caller's display form of the argv,
    e.g. with secrets masked; default shlex.join)."""
    cmd = shlex.join(proc.argv) if command is None else command
    cmd = cmd if len(cmd) <= 120 else cmd[:117] + "..."
    return f"pid {proc.pid}  port {proc.port}  log {proc.log_path or '(not a file)'}  {cmd}"


async def pick_server(host: Host, pid: int | None = None) -> ServerProcess:
    """The one server to use: the only one found, or `pid`. One-line DiscoveryError otherwise."""
    servers = await discover(host)
    if pid is not None:
        for proc in servers:
            if proc.pid == pid:
                return proc
        res = await host.run(["cat", f"/proc/{pid}/cmdline"])
        if res.exit_status != 0:
            raise DiscoveryError(f"no process {pid} on {host.name}; run without --pid to list SGLang servers")
        # Another process's argv: secrets masked, control characters dropped, shortened; it is data.
        shown = display_argv([a for a in res.stdout.split("\0") if a])
        runs = "".join(ch if ch.isprintable() else "?" for ch in shown)[:100]
        raise DiscoveryError(f"pid {pid} on {host.name} is not an SGLang server (it runs: {runs}); "
                             "run without --pid to list SGLang servers")
    if not servers:
        raise DiscoveryError(f"no SGLang server found on {host.name}; give the log path as "
                             f"{host.name}:/path/to/log, or start the server")
    if len(servers) > 1:
        raise SeveralServers(f"{len(servers)} SGLang servers on {host.name}; pick one with --pid "
                             f"({', '.join(str(p.pid) for p in servers)})", servers)
    return servers[0]
