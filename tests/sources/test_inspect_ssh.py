"""`spectui inspect` over a real sshd: the running server's draft read on the "remote" host, over SFTP and
(a server without the sftp subsystem) over exec'd reads; a 10 GB draft costs only its header bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from draftckpt import draft_config, eagle3_tensors, write_ckpt, write_target  # noqa: E402
from procs import free_port, started, stub_sglang, wait_for_text
from sshd_harness import Sshd, start_sshd
from test_draft_bigfile import INTER, KV, VOCAB, H, write_sparse_draft  # noqa: E402

from spectui.core.draft import inspect  # noqa: E402
from spectui.sources.ckptreader import SSHReader  # noqa: E402
from spectui.sources.ssh import SSHHost, SSHOptions  # noqa: E402

pytestmark = pytest.mark.sshd


@pytest.fixture(scope="module")
def nosftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-nosftp-inspect"), sftp=False)
    try:
        yield server
    finally:
        server.stop()


def ssh_opts(sshd: Sshd) -> list[str]:
    return ["--ssh-config", "/dev/null", "-i", str(sshd.client_key), "--known-hosts", str(sshd.known_hosts)]


def host_for(sshd: Sshd) -> SSHHost:
    return SSHHost("127.0.0.1", user=sshd.user, port=sshd.port,
                   options=SSHOptions("/dev/null", (str(sshd.client_key),), str(sshd.known_hosts)))


def spectui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=120)


def hub_draft(hf_home: Path, repo: str = "acme/llama-eagle3") -> Path:
    """An EAGLE-3 draft in the HF cache layout (hub/models--org--name/snapshots/REV + refs/main)."""
    org, name = repo.split("/")
    base = hf_home / "hub" / f"models--{org}--{name}"
    rev = "0123456789abcdef0123456789abcdef01234567"
    write_ckpt(base / "snapshots" / rev, draft_config(), eagle3_tensors())
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(rev)
    return base / "snapshots" / rev


def test_the_running_servers_draft_is_read_on_its_host(sshd: Sshd, tmp_path: Path) -> None:
    target = write_target(tmp_path / "target")
    hub_draft(tmp_path / "hf")
    argv = [*stub_sglang(tmp_path)[:3], "--model-path", str(target), "--speculative-algorithm", "EAGLE",
            "--speculative-draft-model-path", "acme/llama-eagle3", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--port", str(free_port())]
    env = {"PYTHONPATH": str(tmp_path / "stubpath"), "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_CACHE", None)
    with started(argv, tmp_path / "server.log", cwd=tmp_path, env=env) as proc:
        wait_for_text(tmp_path / "server.log", "on stderr")
        res = spectui("inspect", sshd.target, "--pid", str(proc.pid), "--sglang-version", "0.5.6", "--json",
                      *ssh_opts(sshd))
        human = spectui("inspect", sshd.target, "--pid", str(proc.pid), *ssh_opts(sshd))
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert doc["source"]["host"] == sshd.target and doc["source"]["pid"] == proc.pid
    assert doc["source"]["hf_cache"] == str(tmp_path / "hf")
    assert doc["draft"]["source"] == "hf-cache" and doc["draft"]["format"] == "sglang-eagle3"
    assert doc["target"]["num_layers"] == 8 and doc["launch"]["algorithm"] == "EAGLE"
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["alg-eagle3-draft-as-eagle"]
    assert human.returncode == 1 and "alg" not in human.stderr
    assert "fix: launch with --speculative-algorithm EAGLE3" in human.stdout
    assert f"on {sshd.target} pid {proc.pid}" in human.stdout


async def test_sftp_and_exec_readers_agree(sshd: Sshd, nosftp: Sshd, tmp_path: Path) -> None:
    target = write_target(tmp_path / "target")
    draft = write_ckpt(tmp_path / "draft", draft_config(), eagle3_tensors())
    (tmp_path / "link").symlink_to(draft)
    results = {}
    for label, server in (("sftp", sshd), ("exec", nosftp)):
        host = host_for(server)
        await host.connect()
        try:
            reader = SSHReader(host)
            assert await reader.size(str(draft / "config.json")) == (draft / "config.json").stat().st_size
            assert await reader.size(str(draft)) is None and await reader.listdir(str(draft / "config.json")) is None
            assert await reader.listdir(str(tmp_path / "link")) == ["config.json", "model.safetensors"]
            assert await reader.size(str(tmp_path / "missing")) is None
            with pytest.raises(FileNotFoundError):
                await reader.read(str(tmp_path / "missing"), 0, 10)
            assert await reader.read(str(draft / "config.json"), 2, 5) == (draft / "config.json").read_bytes()[2:7]
            result = await inspect(reader, draft=str(tmp_path / "link"), model=str(target), algorithm="EAGLE3",
                                   sglang_version="0.5.6")
            assert host.transport == label
        finally:
            await host.close()
        doc = result.to_json()
        results[label] = (doc["findings"], {k: v for k, v in doc["draft"].items() if k != "bytes_read"})
        assert result.exit_code == 0 and 0 < reader.bytes_read < 10_000
    assert results["sftp"] == results["exec"]


@pytest.mark.parametrize("which", ["sftp", "exec"])
async def test_a_10_gb_draft_costs_its_header_over_ssh(which: str, sshd: Sshd, nosftp: Sshd, tmp_path: Path) -> None:
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": H,
           "intermediate_size": INTER, "num_attention_heads": 64, "num_key_value_heads": KV,
           "num_hidden_layers": 1, "vocab_size": VOCAB, "draft_vocab_size": 32000, "max_position_embeddings": 131072,
           "tie_word_embeddings": False, "torch_dtype": "float32",
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 39, 76]}}
    d = write_ckpt(tmp_path / "d", cfg, None)
    header, data = write_sparse_draft(d)
    size = os.stat(d / "model.safetensors").st_size
    assert size > 10 * 10**9 and os.stat(d / "model.safetensors").st_blocks * 512 < 10**8  # a sparse file
    host = host_for(sshd if which == "sftp" else nosftp)
    await host.connect()
    try:
        reader = SSHReader(host)
        result = await inspect(reader, draft=str(d), algorithm="EAGLE3", sglang_version="0.5.6")
    finally:
        await host.close()
    assert result.draft["format"] == "sglang-eagle3" and result.draft["tensor_bytes"] == data
    # header + the d2t/t2d maps (32000 x 8 + 128256 bytes) + config.json: well under a megabyte of 10 GB
    assert reader.bytes_read < 8 + header + 32000 * 8 + VOCAB + 64_000
    assert "internal-check-error" not in {f.code for f in result.findings}


def test_unreachable_draft_path_on_the_host_and_bad_target(sshd: Sshd, tmp_path: Path) -> None:
    res = spectui("inspect", sshd.target, "--draft", str(tmp_path / "nowhere"), "--json", *ssh_opts(sshd))
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["findings"][0]["code"] == "draft-path-missing"
    bad = spectui("inspect", sshd.target, *ssh_opts(sshd), "--pid", "1")
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "not an SGLang server" in bad.stderr
