"""The host's own SGLang flags reach every judge of a live server's command: the cockpit's config panel and
rules (Cockpit(catalogue=) / ConfigContext(host_catalogue=)), `spectui inspect TARGET`; and the server's
interpreter is found the way the dump needs it (venv argv[0], a console script's shebang, /proc/PID/exe)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

from hostflags_stub import FUTURE_FLAG, fake_sglang, free_port, spectui, stub_server  # noqa: E402

from spectui.core.launch import parse_command  # noqa: E402
from spectui.core.rules import ConfigContext  # noqa: E402
from spectui.sources.base import ServerProcess  # noqa: E402
from spectui.sources.discover import pick_server  # noqa: E402
from spectui.sources.hostflags_run import dump_argv, server_catalogue, server_python  # noqa: E402
from spectui.sources.local import LocalHost  # noqa: E402
from spectui.ui.controller import Cockpit  # noqa: E402

CHAIN = ("--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4", FUTURE_FLAG, "7")


def _proc(argv: tuple[str, ...], cwd: str = "/srv", pid: int = 1) -> ServerProcess:
    return ServerProcess(pid=pid, pgid=pid, argv=argv, env={}, cwd=cwd, log_path=None, port=30000,
                         host_addr="127.0.0.1", gpu_ids=(), stderr_path=None, program="python -m sglang.launch_server")


def test_cockpit_and_rules_judge_with_the_hosts_flags(tmp_path: Path) -> None:
    site, port = fake_sglang(tmp_path), free_port()

    async def read() -> tuple:
        host = LocalHost(read_only=True)
        server = await pick_server(host, proc.pid)
        return server, await server_catalogue(host, server, "0.5.99", cache=tmp_path / "cache")

    with stub_server(site, port, tmp_path / "server.log", *CHAIN) as proc:
        server, catalogue = asyncio.run(read())
    assert catalogue[1].source == "host"
    launch = parse_command(list(server.argv))
    cockpit = Cockpit(launch=launch, version="0.5.99", rules=[], catalogue=catalogue)
    assert cockpit.resolution.outcome == "ok" and cockpit.resolution.catalogue.source == "host"
    assert cockpit.resolution.requested["speculative_future_knob"] == 7
    assert Cockpit(launch=launch, version="0.5.99", rules=[]).resolution.outcome == "argparse_error"
    ctx = ConfigContext(launch=launch, version="0.5.99", host_catalogue=catalogue[0])
    assert ctx.resolution.outcome == "ok" and ctx.requested["speculative_future_knob"] == 7


def test_inspect_names_the_hosts_catalogue(tmp_path: Path) -> None:
    site, port = fake_sglang(tmp_path), free_port()
    with stub_server(site, port, tmp_path / "server.log", *CHAIN) as proc:
        res = spectui("inspect", "local", "--pid", str(proc.pid), "--json", cache=tmp_path / "cache")
    doc = json.loads(res.stdout)
    assert doc["source"]["sglang_version"] == "0.5.99"
    assert doc["source"]["catalogue"]["source"] == "host", doc["source"]
    assert doc["launch"]["algorithm"] == "EAGLE3"


def test_the_servers_interpreter(tmp_path: Path) -> None:
    host = LocalHost(read_only=True)
    run = asyncio.run
    assert run(server_python(host, _proc(("/venv/bin/python3", "-m", "sglang.launch_server")))) == "/venv/bin/python3"
    assert run(server_python(host, _proc(("python3", "-m", "sglang.launch_server")))) == "python3"  # server's PATH
    assert run(server_python(host, _proc(("./env/bin/python", "-m", "x"), cwd="/srv/a"))) == "/srv/a/env/bin/python"
    script = tmp_path / "bin" / "sglang"
    script.parent.mkdir()
    script.write_text("#!/opt/venv/bin/python3.11\nimport sys\n")
    assert run(server_python(host, _proc((str(script), "serve", "--model-path", "/m")))) == "/opt/venv/bin/python3.11"
    script.write_text("#!/usr/bin/env -S python3 -u\n")
    assert run(server_python(host, _proc((str(script), "serve")))) == "python3"
    # Nothing on the command line says: the running process's /proc/PID/exe (this test's own python).
    import os

    me = _proc(("sglang", "serve"), pid=os.getpid())
    assert run(server_python(host, me)) == os.path.realpath(sys.executable)
    assert run(server_python(host, _proc(("sglang", "serve"), pid=2**22 + 7))) == "python3"


def test_dump_argv_keeps_the_servers_python_environment() -> None:
    argv = dump_argv("/v/bin/python", {"PYTHONPATH": "/site", "HF_TOKEN": "secret", "PATH": "/v/bin:/usr/bin"})
    assert argv[:4] == ["env", "PATH=/v/bin:/usr/bin", "PYTHONPATH=/site", "CUDA_VISIBLE_DEVICES="]
    assert argv[4:6] == ["/v/bin/python", "-c"] and "ServerArgs.add_cli_args" in argv[6]
    assert not any("secret" in a for a in argv)


class _CountingHost:
    """LocalHost that counts the flag dumps it runs (any other command passes through uncounted)."""

    def __init__(self) -> None:
        from spectui.core.launch import dump_script

        self.host, self.script, self.dumps = LocalHost(read_only=True), dump_script(), 0
        self.name = self.host.name

    async def run(self, argv, **kw):  # type: ignore[no-untyped-def]
        self.dumps += self.script in argv
        return await self.host.run(argv, **kw)


def test_an_unknown_version_is_cached_by_installation_and_an_upgrade_in_place_dumps_again(tmp_path: Path) -> None:
    site, cache = fake_sglang(tmp_path), tmp_path / "cache"
    server = ServerProcess(pid=2**22 + 9, pgid=1, argv=(sys.executable, "-m", "sglang.launch_server"),
                           env={"PYTHONPATH": str(site)}, cwd="/", log_path=None, port=30000, host_addr="127.0.0.1",
                           gpu_ids=(), stderr_path=None, program="python -m sglang.launch_server")
    host = _CountingHost()

    def read() -> tuple:
        return asyncio.run(server_catalogue(host, server, None, cache=cache))  # /server_info did not answer

    first = read()
    assert host.dumps == 1 and first[1].source == "host" and first[0].version == "0.5.99"
    again = read()
    assert host.dumps == 1, "the same installation with an unknown version dumped again"
    assert again[1] == first[1] and again[0].specs == first[0].specs
    # pip upgrades SGLang in place: its files are rewritten (new mtime/size), the path stays the same.
    (site / "sglang" / "version.py").write_text("__version__ = '0.5.100'\n")
    (site / "sglang" / "srt" / "server_args.py").write_text((site / "sglang" / "srt" / "server_args.py").read_text())
    upgraded = read()
    assert host.dumps == 2 and upgraded[0].version == "0.5.100" and upgraded[1].source == "host"
    assert read()[0].version == "0.5.100" and host.dumps == 2
    # Without that site on its path the interpreter has no SGLang: no installation to key by, so a failed
    # dump is never taken for the cached one (it runs, fails, and the nearest bundled is used).
    bare = dataclasses.replace(server, env={})
    for dumps in (3, 4):
        assert asyncio.run(server_catalogue(host, bare, None, cache=cache))[1].source == "bundled"
        assert host.dumps == dumps
