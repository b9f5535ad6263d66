"""`spectui serve [TARGET...] [--port P] [--host ADDR] [--read-only]`: the cockpit in a browser (textual-serve).

Bound to 127.0.0.1 unless --host says otherwise. A random token is printed in the URL at start; every
request without it gets 403: the printed `?token=` URL answers with a redirect to the same page without
the token, setting an HttpOnly SameSite=Strict cookie (the token stays out of the address bar and the
history); a websocket from another origin (scheme, host or port) gets 403; the page loads nothing from
outside (textual-serve's Roboto Mono from its own static folder, not Google Fonts). textual-serve starts one app process per visit; those processes do
not connect anywhere themselves: the serve process holds the connections and ONE tail per server
(ui/multi/hub.py) and every viewer attaches to it, so all viewers see the same lines. Viewers are
read-only (relaunch needs the host connection, which stays in the serve process): --read-only is the
default and the only mode in this version.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from typing import Any

ENV_SOCKET = "SPECTUI_SERVE_SOCKET"
ENV_TOKEN = "SPECTUI_SERVE_TOKEN"
COOKIE = "spectui_token"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("targets", metavar="TARGET", nargs="*",
                        help="as for connect: local, [user@]host[:port][:/path/to/log], /path/to/log")
    parser.add_argument("--hosts", metavar="FILE", help="more targets, one a line (# comments)")
    parser.add_argument("--log", metavar="PATH", help="one TARGET: the server's log file (default: discovered)")
    parser.add_argument("--pid", type=int, metavar="PID", help="one TARGET: which SGLang server, when the host runs several")
    parser.add_argument("--server-port", type=int, metavar="N", help="one TARGET: the server's HTTP port")
    parser.add_argument("--port", type=int, default=8000, metavar="P", help="HTTP port (default 8000; 0 picks one)")
    parser.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                        help="address to listen on (default 127.0.0.1: this machine only; use an SSH forward)")
    parser.add_argument("--read-only", action="store_true", default=True,
                        help="viewers cannot relaunch (the default, and the only mode for now)")
    parser.add_argument("--baseline-tps", type=float, metavar="TPS", help="decode tok/s without speculation")
    parser.add_argument("--viewer", action="store_true", help=argparse.SUPPRESS)  # one browser visit's app
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    if args.viewer:
        return run_viewer()
    try:
        return asyncio.run(_serve(args))
    except SpectuiError as exc:
        print(f"spectui serve: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 0


def guard(token: str) -> Any:
    """aiohttp middleware: the token (query or cookie) or 403; a websocket only from this origin (scheme,
    host and port). A page asked for with `?token=` is redirected to the same URL without it, setting the
    HttpOnly SameSite=Strict cookie: the token leaves the address bar and the browser's history."""
    import hmac
    from urllib.parse import urlencode

    from aiohttp import web

    @web.middleware
    async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.Response(status=403, text="403 Forbidden: open the URL spectui serve printed (with ?token=)\n")
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin and origin.rstrip("/") != f"{request.scheme}://{request.host}":
            return web.Response(status=403, text="403 Forbidden: websocket from another origin\n")
        if "token" in request.query and request.method in ("GET", "HEAD") and request.path != "/ws":
            rest = [(k, v) for k, v in request.query.items() if k != "token"]
            clean = request.path + ("?" + urlencode(rest) if rest else "")
            moved = web.HTTPSeeOther(location=clean, headers={"Cache-Control": "no-store",
                                                             "Referrer-Policy": "no-referrer"})
            moved.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
            return moved
        response = await handler(request)
        if request.query.get("token") and not response.prepared:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
        return response

    return middleware


_FONT_LINK = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*>", re.S)


def local_templates(folder: str) -> str:
    """textual-serve's page template with its one outside load (Google Fonts' Roboto Mono stylesheet)
    replaced by an @font-face on the Roboto Mono textual-serve ships in its static folder: the page loads
    nothing from outside. Returns the templates folder (inside `folder`)."""
    import textual_serve

    source = os.path.join(os.path.dirname(textual_serve.__file__), "templates")
    out = os.path.join(folder, "templates")
    os.makedirs(out, exist_ok=True)
    face = ('<style>@font-face { font-family: "Roboto Mono"; font-style: normal; font-weight: 100 700; '
            'src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }'
            '@font-face { font-family: "Roboto Mono"; font-style: italic; font-weight: 100 700; '
            'src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }'
            "</style>")
    for name in os.listdir(source):
        with open(os.path.join(source, name), encoding="utf-8") as fh:
            text = fh.read()
        with open(os.path.join(out, name), "w", encoding="utf-8") as fh:
            fh.write(_FONT_LINK.sub(face, text))
    return out


async def _serve(args: argparse.Namespace) -> int:
    import asyncio
    import secrets
    import socket
    import tempfile

    from aiohttp import web
    from textual_serve.server import Server

    from spectui.commands.connect import build_session
    from spectui.commands.connect import multi as connectmulti
    from spectui.errors import UsageError
    from spectui.ui.multi.assemble import tab_specs
    from spectui.ui.multi.hub import HubServer

    args.prometheus = None
    targets = connectmulti.all_targets(args)
    if not targets:
        raise UsageError("serve needs a TARGET (or --hosts FILE)")
    sessions = await connectmulti.sessions_for(args, [t for t, _ in targets], build_session)
    for s in sessions:
        s.read_only = True
    specs = tab_specs(sessions, [b if b is not None else args.baseline_tps for _, b in targets])
    token = secrets.token_urlsafe(24)
    folder = tempfile.mkdtemp(prefix="spectui-serve-")  # 0700: the hub socket is ours alone
    hub = HubServer(specs, os.path.join(folder, "hub.sock"), token)
    await hub.start()
    port = args.port
    if port == 0:
        with socket.socket() as probe:
            probe.bind((args.host, 0))
            port = probe.getsockname()[1]
    # The viewer processes find the hub and its token in their environment (not on a command line).
    os.environ[ENV_SOCKET], os.environ[ENV_TOKEN] = hub.path, token
    command = viewer_command()
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    server = Server(command, host=args.host, port=port, title="spectui",
                    public_url=f"http://{shown_host}:{port}", templates_path=local_templates(folder))
    server.console.quiet = True
    app = await server._make_app()  # textual-serve's routes, in our event loop beside the hub
    app.middlewares.append(guard(token))
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, port)
    await site.start()
    print(f"spectui serve: http://{shown_host}:{port}/?token={token}", flush=True)
    print(f"spectui serve: {len(specs)} tab{'s' if len(specs) != 1 else ''}, read-only; Ctrl-C stops",
          file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await hub.close()
        for s in sessions:
            if s.host is not None:
                await s.host.close()
        with contextlib.suppress(OSError):
            os.unlink(hub.path)
            os.rmdir(folder)
    return 0


def viewer_command() -> str:
    """The shell command textual-serve runs per browser visit: `python -P` (a `spectui/` folder in the
    working directory never runs instead of spectui; the viewer holds the hub token), with PYTHONPATH set
    in this process's environment so the viewer imports this very spectui."""
    import shlex

    from spectui.commands.demo.simrun import child_python, own_pythonpath

    os.environ["PYTHONPATH"] = own_pythonpath(dict(os.environ))
    return shlex.join([*child_python(), "-m", "spectui", "serve", "--viewer"])


def run_viewer() -> int:
    """One browser visit: the cockpit on the hub's tabs (textual-serve's web driver comes from the env)."""
    import asyncio

    from spectui.ui.multi.hub import fetch_tabs

    path, token = os.environ.get(ENV_SOCKET, ""), os.environ.get(ENV_TOKEN, "")
    try:
        tabs = asyncio.run(fetch_tabs(path, token))
    except (OSError, ValueError) as exc:
        print(f"spectui serve --viewer: no session to attach to ({exc})", file=sys.stderr)
        return 1
    app = viewer_app(tabs, path, token)
    app.run()
    return app.return_code or 0


def viewer_app(tabs: list[dict[str, Any]], path: str, token: str) -> Any:
    from spectui.core.launch import parse_command
    from spectui.errors import CommandParseError
    from spectui.ui.app import SpectuiApp
    from spectui.ui.multi.app import TabbedApp, TabSpec
    from spectui.ui.multi.hub import hub_tail
    from spectui.ui.session import Session

    specs = []
    for i, t in enumerate(tabs):
        try:
            launch = parse_command(t["launch"]) if t.get("launch") else None
        except CommandParseError:
            launch = None
        session = Session(label=t["label"], log_path=t["log_path"], launch=launch, sglang_version=t.get("version"),
                          read_only=True, server_port=t.get("server_port"), tail_factory=hub_tail(path, token, i),
                          probe_gpus=False, current_pid=t.get("pid"))
        specs.append(TabSpec(t["label"], session, refusal=t.get("refusal"), baseline_tps=t.get("baseline_tps")))
    if len(specs) == 1:
        return SpectuiApp(specs[0].session)
    return TabbedApp(specs)
