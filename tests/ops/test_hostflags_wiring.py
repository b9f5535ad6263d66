"""The host's own SGLang flags reach every judge of a live server's command: the cockpit's config panel and
rules (Cockpit(catalogue=) / ConfigContext(host_catalogue=)), `spectui inspect TARGET`; and the server's
interpreter is found the way the dump needs it (venv argv[0], a console script's shebang, /proc/PID/exe)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
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
