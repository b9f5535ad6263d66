"""`spectui inspect [TARGET] [--draft PATH] [--model PATH] [--launch CMD] [--sglang-version V] [--json]`:
is the draft checkpoint the problem? Reads config.json and safetensors headers where the server runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spectui.commands.sshopts import add_ssh_options

    parser.add_argument("target", metavar="TARGET", nargs="?",
                        help="where the server runs: local or [user@]host[:port]; its running SGLang server's "
                             "draft is inspected there (omit it to inspect local paths)")
    parser.add_argument("--draft", metavar="PATH", help="the draft checkpoint (directory or HF hub id)")
    parser.add_argument("--model", metavar="PATH", help="the target model (directory or HF hub id)")
    parser.add_argument("--launch", metavar="CMD", help="a launch command naming the model, draft and algorithm")
    parser.add_argument("--sglang-version", metavar="V",
                        help="SGLang release (default: the server's /server_info, else its log, else unknown)")
    parser.add_argument("--pid", type=int, help="the server's pid (when the host runs several)")
    parser.add_argument("--server-port", type=int, metavar="N",
                        help="the server listening on port N (when the host runs several)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (CONTRACTS.md)")
    add_ssh_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from spectui.errors import SpectuiError

    try:
        done = asyncio.run(_run(args))
    except SpectuiError as exc:
        print(f"spectui inspect: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        from spectui.core.text import json_text  # names from a checkpoint are data: escaped, never raw

        print(json_text(to_json(done)))
    else:
        render(done)
    return int(done.inspection.exit_code)


def to_json(done: Any) -> dict[str, Any]:
    """The contract's object, plus where the inputs came from ("source")."""
    out = dict(done.inspection.to_json())
    out["source"] = {"host": done.host, "pid": done.pid, "sglang_version": done.version,
                     "sglang_version_from": done.version_from, "hf_cache": done.hf_cache,
                     "bytes_read": done.reader.bytes_read,
                     "catalogue": done.catalogue.to_json() if getattr(done, "catalogue", None) else None}
    return out


async def _run(args: argparse.Namespace) -> Any:
    from spectui.errors import CommandParseError, UsageError
    from spectui.sources.ckptreader import inspect_launch
    from spectui.sources.target import open_host, parse_target

    launch = None
    if args.launch:
        import sys

        from spectui.core.launch import parse_pasted

        try:  # a whole command, or its flags alone (launch_server assumed), as `check --launch` takes it
            launch, assumed = parse_pasted(args.launch)
        except CommandParseError as exc:
            raise UsageError(f"--launch: {exc}") from None
        if assumed:
            print(f"spectui inspect: --launch: {assumed}", file=sys.stderr)
    if args.target is None:
        if not (args.draft or args.model or launch):
            raise UsageError("nothing to inspect: give --draft PATH (and --model PATH), --launch CMD, "
                             "or a TARGET host running SGLang")
        return await inspect_launch(open_host(parse_target("local")), launch, version=args.sglang_version,
                                    draft=args.draft, model=args.model)
    target = parse_target(args.target)
    if target.kind not in ("local", "ssh"):
        raise UsageError(f"TARGET is a host (local or [user@]host[:port]), not a file ({args.target!r}); "
                         "for checkpoint paths on this machine use --draft PATH --model PATH")
    host = open_host(target, args, read_only=True)
    if target.is_remote:
        await host.connect()
    try:
        if args.draft or args.model or launch:
            return await inspect_launch(host, launch, version=args.sglang_version, draft=args.draft,
                                        model=args.model)
        return await _inspect_running(host, args.pid, args.sglang_version, target.path, args.server_port)
    finally:
        await host.close()


async def _inspect_running(host: Any, pid: int | None, version: str | None, log: str | None,
                           port: int | None = None) -> Any:
    from spectui.sources.ckptreader import inspect_server
    from spectui.sources.discover import discover
    from spectui.sources.target import pick_one

    if log is not None and pid is None:  # `host:/path/to/log`: the server writing that log
        for proc in await discover(host):
            if log in (proc.log_path, getattr(proc, "stderr_path", None)):
                pid = proc.pid
    proc = await pick_one(host, pid, port)
    done = await inspect_server(host, proc, version=version)
    if done.version is None and proc.log_path:
        guessed = await _log_version(host, proc.log_path)
        if guessed:
            done = await inspect_server(host, proc, version=guessed)
            done.version_from = "log"
    return done


async def _log_version(host: Any, path: str) -> str | None:
    """The release the log's first 256 KB point to, when they name one exactly (not a range)."""
    from spectui.core.log import LogParser, guess_version

    try:
        data = await host.read_range(path, 0, 256 * 1024)
    except Exception:  # noqa: BLE001 - the log is optional evidence here
        return None
    parser = LogParser()
    parser.feed_bytes(bytes(data))
    parser.finish()
    guess = guess_version(parser.version_hints)
    return guess if guess and guess[:1].isdigit() else None


# -- human output ---------------------------------------------------------------------------------


def render(done: Any, console: Any = None) -> None:
    from rich.text import Text

    from spectui.commands.console import cli_console
    from spectui.core.text import terminal_safe_short
    from spectui.sources.ckptreader import summary_lines

    console = console or cli_console(highlight=False, soft_wrap=False)
    for label, text in summary_lines(done):
        line = Text(f"{label:<7}", style="bold")
        line.append(terminal_safe_short(text, 400))
        console.print(line)
    findings = done.inspection.findings
    if not findings:
        console.print(Text("no findings: the draft looks loadable and consistent with the target", style="green"))
        return
    errors = sum(f.severity == "error" for f in findings)
    console.print(Text(f"\n{len(findings)} finding(s), {errors} error(s)", style="bold"))
    for f in findings:
        head = Text(f"{f.severity.upper():<8}", style=_SEVERITY_STYLE.get(f.severity, ""))
        head.append(f"{f.category}  ", style="dim")
        head.append(terminal_safe_short(f.title, 400))
        console.print(head)
        for ev in f.evidence[:6]:
            console.print(Text(f"          · {terminal_safe_short(ev, 300)}", style="dim"))
        if f.fix and f.fix != "none":
            console.print(Text(f"          fix: {terminal_safe_short(f.fix, 300)}", style="green"))
