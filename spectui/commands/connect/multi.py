"""`spectui connect T1 T2 …` / `--hosts FILE` / `--prometheus URL`: one tab per server (ui/multi).

Targets are connected concurrently; a target that fails ends the command with its one-line error named
by target (a cockpit with a silently missing server would mislead). --log/--pid/--server-port name one
server and so need exactly one target; with several, write `host:/path/to/log` to pick a server.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Awaitable, Callable
from typing import Any

Build = Callable[..., Awaitable[Any]]  # commands.connect.build_session (passed in: connect imports this module)


def read_hosts_file(path: str) -> list[tuple[str, float | None]]:
    """`TARGET [baseline-tps=T]` a line; `#` starts a comment; blank lines skipped."""
    from spectui.errors import UsageError

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise UsageError(f"--hosts {path}: {exc.strerror or exc}") from exc
    out: list[tuple[str, float | None]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        baseline = None
        for extra in words[1:]:
            key, eq, value = extra.partition("=")
            try:
                baseline = float(value) if key == "baseline-tps" and eq else None
            except ValueError:
                baseline = None
            if baseline is None or baseline <= 0:
                raise UsageError(f"--hosts {path} line {n}: unexpected {extra!r} (write TARGET [baseline-tps=T])")
        out.append((words[0], baseline))
    return out


def all_targets(args: argparse.Namespace) -> list[tuple[str, float | None]]:
    from spectui.errors import UsageError

    targets: list[tuple[str, float | None]] = [(t, None) for t in (args.targets or [])]
    if getattr(args, "hosts", None):
        targets += read_hosts_file(args.hosts)
    if not targets and not getattr(args, "prometheus", None):
        raise UsageError("connect needs a TARGET (or --hosts FILE, or --prometheus URL)")
    if len(targets) > 1:
        for flag in ("log", "pid", "server_port"):
            if getattr(args, flag, None) is not None:
                raise UsageError(f"--{flag.replace('_', '-')} names one server: with several targets write "
                                 "host:/path/to/log per target instead")
    return targets


async def _session(args: argparse.Namespace, target: str, build: Build) -> Any:
    from spectui.errors import SpectuiError

    one = copy.copy(args)
    one.target = target
    try:
        return await build(one, match_log=True)
    except SpectuiError as exc:
        exc.args = (f"{target}: {exc}",)
        raise


async def sessions_for(args: argparse.Namespace, targets: list[str], build: Build) -> list[Any]:
    """One Session per target, connected concurrently (`build`: commands.connect.build_session)."""
    import asyncio

    results = await asyncio.gather(*(_session(args, t, build) for t in targets), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        for r in results:
            if not isinstance(r, BaseException) and r.host is not None:
                await r.host.close()
        raise errors[0]
    return list(results)


def fleet_source(args: argparse.Namespace) -> Any:
    if not args.prometheus:
        return None
    from spectui.errors import UsageError
    from spectui.fleet import Baselines, PrometheusClient, collect
    from spectui.ui.screens.fleet import FleetSource, read_fleet_map

    mapping: dict[str, str] = {}
    if args.fleet_map:
        try:
            with open(args.fleet_map, encoding="utf-8") as fh:
                mapping = read_fleet_map(fh.read())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--fleet-map {args.fleet_map}: {exc}") from exc
    client = PrometheusClient(args.prometheus)
    baselines = Baselines(default=args.baseline_tps)
    return FleetSource(lambda: collect(client, args.selector or None, baselines=baselines), mapping=mapping,
                       url=client.url)  # credentials masked: the status line shows it


async def main(args: argparse.Namespace, targets: list[tuple[str, float | None]], build: Build) -> int:
    from spectui.ui.multi.app import TabbedApp
    from spectui.ui.multi.assemble import tab_specs

    fleet = fleet_source(args)
    sessions = await sessions_for(args, [t for t, _ in targets], build)
    opened: list[Any] = list(sessions)
    baselines = [b if b is not None else args.baseline_tps for _, b in targets]

    async def opener(target: str, server_port: int | None = None) -> Any:
        """A fleet instance's tab: `server_port` (the instance's port) picks the server on a host running
        several."""
        one = copy.copy(args)
        one.server_port = server_port
        session = await _session(one, target, build)
        opened.append(session)
        return tab_specs([session], [args.baseline_tps])[0]

    try:
        app = TabbedApp(tab_specs(sessions, baselines), fleet=fleet, opener=opener)
        await app.run_async()
        return app.return_code or 0
    finally:
        for s in opened:
            if s.host is not None:
                await s.host.close()
