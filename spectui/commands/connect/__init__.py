"""`spectui connect TARGET...`: find the SGLang server (or take --log), then open the cockpit on it.

Several targets (or `--hosts FILE`, or `--prometheus URL`) open one tab per server (ui/multi); one target
alone opens the single-server cockpit exactly as before.

Everything asynchronous (SSH connection, discovery, the app itself) runs in one event loop, because an
asyncssh connection belongs to the loop that made it. Module-level imports stay light (argparse/stdlib).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("targets", metavar="TARGET", nargs="*",
                        help="local, [user@]host[:port], [user@]host[:port]:/path/to/log, or /path/to/log; "
                             "several open one tab each")
    parser.add_argument("--hosts", metavar="FILE",
                        help="more targets, one a line (# comments; 'TARGET baseline-tps=T' sets a baseline)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="a Prometheus scraping the SGLang servers: the fleet screen (key 0) lists them")
    parser.add_argument("--selector", metavar="S", default="", help="with --prometheus: label matchers")
    parser.add_argument("--fleet-map", metavar="FILE",
                        help="with --prometheus: 'INSTANCE SSH-TARGET' a line (default: the instance's host)")
    parser.add_argument("--baseline-tps", type=float, metavar="TPS",
                        help="decode tok/s of one request without speculation (a single stream): the speculative "
                             "panel shows ×N per request vs no speculation while one request runs, and says a "
                             "baseline at that concurrency is needed otherwise")
    parser.add_argument("--log", metavar="PATH", help="the server's log file on that host (default: discovered)")
    parser.add_argument("--pid", type=int, metavar="PID", help="which SGLang server, when the host runs several")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server's HTTP port (default: discovered); on a host running several, the one on it")
    parser.add_argument("--read-only", action="store_true", help="watch only: relaunch is disabled")
    parser.add_argument("--speed", type=float, default=1.0, metavar="X",
                        help="TARGET is an incident bundle: replay it X times faster than real time (default 1)")
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.commands.connect import multi as connectmulti
    from spectui.errors import SpectuiError

    try:
        targets = connectmulti.all_targets(args)
        if len(targets) == 1 and not args.prometheus:
            args.target = targets[0][0]
            if args.baseline_tps is None:
                args.baseline_tps = targets[0][1]  # a hosts file's TARGET baseline-tps=T
            return asyncio.run(_main(args))
        return asyncio.run(connectmulti.main(args, targets, build_session))
    except SpectuiError as exc:
        print(f"spectui connect: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("spectui connect: interrupted", file=sys.stderr)
        return 130


UNKNOWN_HOST_TRIES = 3  # a host name the resolver does not know fails after this many tries in a row


async def connect_with_retry(host: Any, *, say: Any = None) -> None:
    """Connect, retrying an unreachable host with backoff and saying so (as `spectui watch` does); a host
    key or permission problem ends it at once (retrying cannot fix those), an unknown host name after
    UNKNOWN_HOST_TRIES tries. Ctrl-C gives up."""
    import asyncio

    from spectui.errors import AuthError, ConnectError, HostKeyError, UnknownHostError
    from spectui.sources.tail import BACKOFF

    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    attempt = unknown = 0
    while True:
        try:
            await host.connect()
            if attempt:
                say(f"spectui connect: connected to {host.name}")
            return
        except (HostKeyError, AuthError):
            raise
        except ConnectError as exc:
            unknown = unknown + 1 if isinstance(exc, UnknownHostError) else 0
            if unknown >= UNKNOWN_HOST_TRIES:  # a misspelt name: the resolver's error, exit 2 (not for ever)
                raise
            if unknown:  # a resolver hiccup is retried quietly; a typo ends in one line
                await asyncio.sleep(BACKOFF[min(unknown, len(BACKOFF) - 1)])
                continue
            delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
            state = "reconnecting" if attempt < 6 else "lost (still retrying)"
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            say(f"spectui connect: {state} — {first} (next try in {delay:g} s; Ctrl-C gives up)")
            await asyncio.sleep(delay)
            attempt += 1


async def build_session(args: argparse.Namespace, *, match_log: bool = False, pick: Any = None) -> Any:
    """Connect, discover the server, pick the log: a ui Session. Raises SpectuiError with one line.

    `match_log` (several targets): when the host runs several servers, the one writing the given log.
    `pick` (one target on a terminal): `await pick(host_name, servers)` asks which one when several run."""
    import os

    from spectui.errors import DiscoveryError, UsageError
    from spectui.sources.target import open_host, parse_target
    from spectui.ui.session import Session

    target = parse_target(args.target)
    if target.kind == "stdin":
        raise UsageError("connect needs a host or a log file; to follow stdin use `spectui watch -`")
    read_only = bool(args.read_only) or target.kind == "file"
    if target.path and target.kind in ("file", "local"):  # binary data / no SGLang line: exit 2, no cockpit
        from spectui.commands.check.sniff import log_file_problem
        from spectui.errors import InputError

        problem = log_file_problem(os.path.expanduser(target.path), target.path, text_too=target.kind == "file")
        if problem:
            raise InputError(problem)
    host = open_host(target, args, read_only=read_only)
    await connect_with_retry(host)
    log_path = args.log or target.path
    server = launch = None
    if target.kind != "file":
        from spectui.sources.discover import SeveralServers, pick_server

        try:
            server = await pick_server(host, args.pid)
        except SeveralServers as exc:
            server = _server_writing(exc.servers, log_path) if match_log else None
            if server is None and args.server_port:  # the one listening on the given port (a fleet instance)
                on_port = [s for s in exc.servers if s.port == args.server_port]
                server = on_port[0] if len(on_port) == 1 else None
            if server is None and pick is not None and not log_path and args.pid is None:
                server = await pick(host.name, exc.servers)  # the picker (ui/screens/picker.py)
                if server is None:
                    raise UsageError(f"no server picked on {host.name}; nothing opened") from None
            if server is None and (not log_path or args.pid is not None):
                from spectui.sources.target import several_message

                raise SeveralServers(several_message(host.name, exc.servers), exc.servers) from None
        except DiscoveryError:
            if not log_path or args.pid is not None:
                raise
        if match_log and server is not None and log_path and args.pid is None and _server_writing([server], log_path) is None:
            server = None  # the host's only server writes another log: this target's server is gone (or never ran)
        if server is not None:
            from spectui.core.launch import parse_command
            from spectui.errors import CommandParseError

            log_path = log_path or server.log_path
            try:
                launch = parse_command(list(server.argv))
            except CommandParseError:
                launch = None  # shown as "launch command unknown"; relaunch is disabled
    if not log_path:
        raise DiscoveryError(f"pid {server.pid if server else '?'} on {host.name} does not write its log to a "
                             f"file spectui can read; pass --log PATH")
    if await host.stat(log_path) is None:
        raise UsageError(f"no log file {log_path} on {host.name}; check the path (or pass --log PATH)")
    from spectui.sources.discover import server_api_key
    from spectui.sources.http import server_version

    label = host.name if target.kind != "file" else "local"
    port = args.server_port or getattr(server, "port", None)
    # What the server says it is (/server_info, through the SSH forward when remote); without a port or
    # an answer the cockpit falls back to guessing from the log.
    key = server_api_key(server.argv) if server is not None else None  # SGLang's /server_info needs it then
    version = await server_version(host, port, getattr(server, "host_addr", None) or "127.0.0.1", key) if port else None
    # A release spectui does not ship: the config panel and rules judge with the host's own SGLang flags.
    catalogue = None
    if server is not None and launch is not None and version is not None:
        from spectui.core.launch import needs_host
        from spectui.sources.hostflags_run import server_catalogue

        catalogue = await server_catalogue(host, server, version) if needs_host(version) else None
    # A log file given as the target is read whole (its server_args line holds the effective config);
    # a server's log starts with a backfill, like tail, and the launch command comes from discovery.
    return Session(label=label, log_path=log_path, host=host, server=server, launch=launch,
                   read_only=read_only, server_port=port, sglang_version=version, flag_catalogue=catalogue,
                   from_start=target.kind == "file")


def _server_writing(servers: Any, log_path: str | None) -> Any:
    import os

    if not log_path:
        return None
    want = os.path.normpath(log_path)
    found = [s for s in servers if s.log_path and os.path.normpath(s.log_path) == want]
    return found[0] if len(found) == 1 else None


async def _main(args: argparse.Namespace) -> int:
    from spectui.ui.app import SpectuiApp
    from spectui.ui.bundle_replay import replay_if_bundle

    pick: Any = None
    if sys.stdin.isatty() and sys.stdout.isatty():  # several servers: asked on screen, not a list and exit
        from spectui.ui.screens.picker import pick_server_on_screen

        pick = pick_server_on_screen
    session = replay_if_bundle(args) or await build_session(args, pick=pick)  # a bundle: replayed, read-only
    try:
        app = SpectuiApp(session, baseline_tps=getattr(args, "baseline_tps", None))
        await app.run_async()
        return app.return_code or 0
    finally:
        if session.host is not None:
            await session.host.close()


def run_demo(args: argparse.Namespace) -> int:
    """`spectui demo` with a screen: start the scenario's simulated server, open the cockpit on its log."""
    import asyncio

    from spectui.commands.demo.simrun import DemoRun
    from spectui.sim.scenarios import SCENARIOS

    demo = DemoRun(SCENARIOS[args.scenario], version=args.sglang_version, time_scale=args.time_scale,
                   duration=args.duration, log_path=args.log)
    pids: list[int] = []
    try:
        return asyncio.run(_demo_main(demo, args, pids))
    except KeyboardInterrupt:
        return 130
    finally:
        demo.stop_sim()
        for pid in pids:
            _stop_relaunched_sim(pid)


async def _demo_main(demo: Any, args: argparse.Namespace, pids: list[int]) -> int:
    import asyncio

    from spectui.core.launch import pick_version
    from spectui.sources.local import LocalHost
    from spectui.sources.tail import LogTail
    from spectui.ui.app import SpectuiApp
    from spectui.ui.session import Session

    path = demo.start_sim()
    host = LocalHost()
    session = Session(
        label=f"demo:{args.scenario}", log_path=path, host=host, launch=demo.launch(),
        # the release the simulator emulates (it picks the same way), not a guess from its log
        sglang_version=pick_version(args.sglang_version)[0], current_pid=demo.proc.pid,
        tail_factory=lambda p: LogTail(host, p, from_start=True).__aiter__(),
    )
    from spectui.core.rules import BaselineTps

    # the simulator's own no-spec speed of one request: what the panel shows x N against
    spec = "--speculative-algorithm" in demo.scenario.flags
    base = BaselineTps(demo.scenario.sim_knobs(time_scale=demo.time_scale).client_baseline_tps, running=1) \
        if spec else None  # in the client's clock: the time scale speeds generation too
    app = SpectuiApp(session, baseline_tps=base, baseline_source="simulator")
    loop = asyncio.get_running_loop()
    if args.duration:
        loop.call_later(args.duration, app.exit)
    import signal

    for sig in (signal.SIGHUP, signal.SIGTERM):  # terminal closed / killed: still stop the simulator
        loop.add_signal_handler(sig, app.exit)
    try:
        await app.run_async()
    finally:
        if session.current_pid not in (None, demo.proc.pid):
            pids.append(session.current_pid)  # a server the cockpit relaunched: ours to stop
    return app.return_code or 0


def _stop_relaunched_sim(pid: int) -> None:
    """SIGTERM the process group of a simulator this demo relaunched, after checking it is one."""
    import contextlib
    import os
    import signal

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return  # already gone
    if b"spectui.sim" not in argv:
        return  # pid reused by something else: not ours
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:  # ops starts it with setsid: it leads its own group
            os.killpg(pid, signal.SIGTERM)
