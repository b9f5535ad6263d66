"""discover() against real processes on this machine, locally and over the real sshd."""

from __future__ import annotations

from pathlib import Path

import pytest
from procs import started, stub_sglang, wait_for_text
from sshd_harness import Sshd

from spectui.errors import DiscoveryError
from spectui.sources.discover import discover, pick_server, program_of
from spectui.sources.local import LocalHost
from spectui.sources.ssh import SSHHost, SSHOptions


@pytest.mark.parametrize(
    ("argv", "program"),
    [
        (["python3", "-m", "sglang.launch_server", "--port", "1"], "python3 -m sglang.launch_server"),
        (["/venv/bin/python", "/venv/bin/sglang", "serve", "--model-path", "m"], "sglang serve"),
        (["sglang", "serve", "m"], "sglang serve"),
        (["/usr/bin/python3.11", "-u", "-m", "spectui.sim"], "python3.11 -m spectui.sim"),
        (["/usr/bin/python3", "-P", "-m", "spectui.sim"], "python3 -m spectui.sim"),  # demo's isolated child
        (["sglang::scheduler_DP0_TP0"], None),  # renamed child (docs/REFERENCE.md §6)
        (["bash", "-c", "python -m sglang.launch_server"], None),  # wrapper: its child is the server
        (["docker", "run", "img", "python3", "-m", "sglang.launch_server"], None),  # the docker client
        (["python3", "-c", "pass", "-m", "sglang.launch_server"], None),
        (["python3", "bench.py", "-m", "sglang.launch_server"], None),
    ],
)
def test_program_of(argv: list[str], program: str | None) -> None:
    assert program_of(argv) == program


async def test_finds_stub_server_with_pgid_env_cwd_log_port_gpus_and_skips_renamed_child(tmp_path: Path) -> None:
    argv = stub_sglang(tmp_path)
    log = tmp_path / "server.log"
    env = {"PYTHONPATH": str(tmp_path / "stubpath"), "CUDA_VISIBLE_DEVICES": "2,3"}
    with started(argv, log, cwd=tmp_path, env=env) as proc, \
            started(["bash", "-c", "exec -a sglang::scheduler sleep 60"], tmp_path / "child.log"):
        wait_for_text(log, "on stderr")
        found = [p for p in await discover(LocalHost()) if p.pid == proc.pid]
        assert len(found) == 1
        srv = found[0]
        assert srv.pgid == proc.pid  # started in its own session
        assert srv.argv == tuple(argv)
        assert srv.env["CUDA_VISIBLE_DEVICES"] == "2,3" and srv.gpu_ids == (2, 3)
        assert srv.cwd == str(tmp_path)
        assert srv.log_path == str(log)
        assert srv.port == 31234
        assert srv.program.endswith("-m sglang.launch_server")
        assert all(not p.argv[0].startswith("sglang::") for p in await discover(LocalHost()))
        assert (await pick_server(LocalHost(), proc.pid)).pid == proc.pid


async def test_empty_argv_words_are_kept(tmp_path: Path) -> None:
    """`--x ""` is a flag with an empty value: dropping the word would give the next flag to --x."""
    argv = [*stub_sglang(tmp_path), "--chat-template", "", "--served-model-name", "m", ""]
    log = tmp_path / "server.log"
    with started(argv, log, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "stubpath")}) as proc:
        wait_for_text(log, "on stderr")
        srv = await pick_server(LocalHost(), proc.pid)
        assert srv.argv == tuple(argv)


async def test_pid_that_is_not_sglang_is_a_one_line_error(tmp_path: Path) -> None:
    with started(["sleep", "60"], tmp_path / "x.log") as proc:
        pattern = f"pid {proc.pid} .* not an SGLang server .*sleep 60"
        with pytest.raises(DiscoveryError, match=pattern):
            await pick_server(LocalHost(), proc.pid)
    with pytest.raises(DiscoveryError, match="no process 999999999"):
        await pick_server(LocalHost(), 999999999)


async def test_not_sglang_error_masks_secrets_and_control_characters_of_the_other_process(tmp_path: Path) -> None:
    """The message quotes another process's argv: an API key or an escape sequence in it must not reach
    the operator's terminal."""
    argv = ["python3", "-c", "import time;time.sleep(60)", "--api-key", "sekrit-value", "\x1b]0;owned\x07"]
    with started(argv, tmp_path / "x.log") as proc, pytest.raises(DiscoveryError) as info:
        await pick_server(LocalHost(), proc.pid)
    message = str(info.value)
    assert "not an SGLang server" in message and "--api-key" in message
    assert "sekrit-value" not in message and "\x1b" not in message and "\x07" not in message


async def test_discovery_over_ssh_is_one_remote_command(sshd: Sshd, tmp_path: Path) -> None:
    argv = stub_sglang(tmp_path)
    log = tmp_path / "server.log"
    with started(argv, log, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "stubpath")}) as proc:
        wait_for_text(log, "on stderr")
        host = SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                       options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))
        await host.connect()
        calls: list[list[str]] = []
        run = host.run

        async def counting_run(a, **kw):  # type: ignore[no-untyped-def]
            calls.append(list(a))
            return await run(a, **kw)

        host.run = counting_run  # type: ignore[method-assign]
        try:
            srv = await pick_server(host, proc.pid)
        finally:
            await host.close()
    assert srv.log_path == str(log) and srv.port == 31234 and srv.cwd == str(tmp_path)
    assert len(calls) == 1
