"""Reading the host's own SGLang flags (data/dump_flags.py) for a release spectui does not ship, against a fake
minimal `sglang` package (real SGLang cannot be installed here)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from spectui.core.launch import (
    ArgparseFailure,
    HostFlagsError,
    catalogue_for_host,
    parse_dump,
    read_host_catalogue,
    resolve,
)

SERVER_ARGS = '''
import argparse
import dataclasses


def nullable_str(v):
    return None if v.lower() in ("none", "") else v


@dataclasses.dataclass
class ServerArgs:
    model_path: str = None

    @staticmethod
    def add_cli_args(parser):
        print("an import-time message SGLang prints")
        parser.add_argument("--model-path", "--model", type=str, required=True, dest="model_path")
        parser.add_argument("--speculative-algorithm", type=nullable_str, choices=["EAGLE", "EAGLE3", "NGRAM"])
        parser.add_argument("--speculative-num-steps", type=int, default=None)
        parser.add_argument("--cuda-graph-max-bs-decode", type=int)
        parser.add_argument("--cuda-graph-max-bs-prefill", type=int)
        parser.add_argument("--enable-metrics", action="store_true")
        parser.add_argument("--enable-thing", action=argparse.BooleanOptionalAction, default=True)
        parser.add_argument("--json-arg", type=int, default=float("inf"))
'''


@pytest.fixture
def fake_sglang(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "sglang" / "srt").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "sglang" / "version.py").write_text('__version__ = "0.5.99.dev3+gabc"\n')
    (root / "sglang" / "srt" / "__init__.py").write_text("")
    (root / "sglang" / "srt" / "server_args.py").write_text(SERVER_ARGS)
    return root


def _runner(site: Path | None, calls: list[Sequence[str]]):
    def run(argv: Sequence[str]) -> str:
        calls.append(argv)
        env = {**os.environ, "PYTHONPATH": str(site) if site else ""}
        return subprocess.run(list(argv), capture_output=True, text=True, check=True, env=env, timeout=60).stdout
    return run


def test_dump_script_reads_the_fake_sglang(fake_sglang: Path, tmp_path: Path) -> None:
    calls: list[Sequence[str]] = []
    cat = read_host_catalogue(_runner(fake_sglang, calls), sys.executable, host="gpu1", cache=tmp_path / "c")
    assert cat.version == "0.5.99.dev3+gabc"
    assert calls[0][0] == sys.executable and calls[0][1] == "-c"
    spec = cat.by_dest["speculative_algorithm"]
    assert spec.flags == ("--speculative-algorithm",) and spec.type == "nullable_str"
    assert spec.choices == ("EAGLE", "EAGLE3", "NGRAM")
    assert cat.by_flag["--model"].dest == "model_path"
    assert cat.by_dest["enable_thing"].action == "BooleanOptionalAction"
    assert cat.by_dest["json_arg"].default == "inf"  # not JSON: its repr
    parsed = cat.parse_args(["--model", "m", "--speculative-algorithm", "EAGLE3", "--no-enable-thing"], "sglang serve")
    assert parsed.given == {"model_path": "m", "speculative_algorithm": "EAGLE3", "enable_thing": False}
    with pytest.raises(ArgparseFailure, match="ambiguous option: --cuda-graph-max-bs could match"):
        cat.parse_args(["--model-path", "m", "--cuda-graph-max-bs", "16"])


def test_dump_is_cached_per_host_and_version(fake_sglang: Path, tmp_path: Path) -> None:
    calls: list[Sequence[str]] = []
    run = _runner(fake_sglang, calls)
    read_host_catalogue(run, sys.executable, host="root@gpu1", cache=tmp_path / "c")
    again = read_host_catalogue(run, sys.executable, host="root@gpu1", version="0.5.99.dev3+gabc",
                                cache=tmp_path / "c")
    assert len(calls) == 1 and again.version == "0.5.99.dev3+gabc"
    read_host_catalogue(run, sys.executable, host="other", version="0.5.99.dev3+gabc", cache=tmp_path / "c")
    assert len(calls) == 2


def test_release_not_shipped_uses_the_hosts_flags(fake_sglang: Path, tmp_path: Path) -> None:
    cat, pick = catalogue_for_host("0.5.99.dev3+gabc", _runner(fake_sglang, []), sys.executable, host="gpu1",
                                   cache=tmp_path / "c")
    assert pick.source == "host" and pick.exact and "gpu1" in pick.why
    res = resolve(["--model-path", "m", "--speculative-algorithm", "EAGLE3"], "0.5.99.dev3+gabc", host_catalogue=cat)
    assert res.catalogue is not None and res.catalogue.source == "host"
    assert res.catalogue_version == "0.5.99.dev3+gabc"


def test_shipped_release_needs_no_host_run(tmp_path: Path) -> None:
    calls: list[Sequence[str]] = []
    cat, pick = catalogue_for_host("0.5.20", _runner(None, calls), cache=tmp_path / "c")
    assert calls == [] and pick.exact and pick.version == "0.5.20" and cat.version == "0.5.20"


def test_failure_falls_back_to_the_nearest_bundled_with_a_note(tmp_path: Path) -> None:
    # No sglang importable for that Python: the dump fails, the nearest bundled catalogue is used.
    cat, pick = catalogue_for_host("0.5.30", _runner(tmp_path / "nothing", []), sys.executable, host="gpu1",
                                   cache=tmp_path / "c")
    assert cat.version == "0.5.23" and not pick.exact and pick.source == "bundled"
    assert "0.5.23" in pick.why and "reading gpu1's own flags failed" in pick.why
    _cat, no_run = catalogue_for_host("0.5.30", None)
    assert "no way to run" in no_run.why


def test_parse_dump_rejects_other_output() -> None:
    with pytest.raises(HostFlagsError):
        parse_dump("Traceback (most recent call last):\nModuleNotFoundError: No module named 'sglang'\n")
    with pytest.raises(HostFlagsError):
        parse_dump('SPECTUI-FLAGS {"flags": []}')
