"""`spectui record` / `report` / `check FILE` / `connect FILE` as a user runs them, on a REAL simulated server
launched with `--api-key SECRETVALUE` and `HF_TOKEN=hf_xxx` in its environment (the seed's silent override)."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from ops.ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health

from spectui.sim.scenarios import SCENARIOS

SECRETS = (b"SECRETVALUE", b"hf_xxx")


def spectui(*argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *argv], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One simulator for the module: the silent-override scenario with an API key and an HF token."""
    root = tmp_path_factory.mktemp("reclab")
    lab = SimLab(root, free_port())
    flags = [*SCENARIOS["silent-override"].flags, "--api-key", "SECRETVALUE", "--host", "127.0.0.1"]
    env = {**SIM_FAST_ENV, "SPECTUI_SIM_TRAFFIC": "20", "SPECTUI_SIM_CONCURRENCY": "1", "HF_TOKEN": "hf_xxx"}
    try:
        pid = lab.start(flags, env=env)
        wait_health(lab.port)
        log = root / "server.log"
        deadline = time.monotonic() + 60
        while log.read_text(errors="replace").count("Decode batch") < 5:
            assert time.monotonic() < deadline, "no decode lines from the simulator"
            time.sleep(0.2)
        bundle = root / "incident.spectui.tar.gz"
        out = spectui("record", "local", "--pid", str(pid), "-o", str(bundle), "--duration", "2",
                      "--interval", "0.5")
        assert out.returncode == 0, out.stderr
        yield {"bundle": bundle, "log": log, "pid": pid, "root": root, "stderr": out.stderr}
    finally:
        lab.cleanup()


def test_record_writes_every_part_and_no_secret_byte(recorded) -> None:
    raw = recorded["bundle"].read_bytes()
    plain = gzip.decompress(raw)
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        names = tar.getnames()
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert names[0] == "manifest.json"
    for secret in SECRETS:
        assert secret not in plain and secret not in raw
        for name, data in members.items():
            assert secret not in data, f"{secret!r} in {name}"
    # It really recorded this server: its log, launch, snapshots over the window, series, diagnoses.
    assert {"log.txt", "launch.json", "config.json", "series.jsonl", "diagnoses.json", "history.json"} <= set(names)
    assert sum(n.startswith("server_info/") for n in names) >= 3
    assert sum(n.startswith("metrics/") for n in names) >= 3
    launch = json.loads(members["launch.json"])
    assert "--api-key '***'" in launch["command"] or "--api-key ***" in launch["command"]
    assert launch["env"]["HF_TOKEN"] == "***" and launch["pid"] == recorded["pid"]
    manifest = json.loads(members["manifest.json"])
    assert {m["name"] for m in manifest["masked"]} >= {"HF_TOKEN", "--api-key"}
    assert manifest["sglang_version"] and manifest["spectui_version"]
    config = json.loads(members["config.json"])
    assert config["requested"]["speculative_num_draft_tokens"] == 16
    assert config["effective"]["speculative_num_draft_tokens"] == 2 and config["verdict"] == "ok"
    series = [json.loads(x) for x in members["series.jsonl"].splitlines()]
    assert len(series) >= 5 and all(1.0 <= s["accept_len"] <= 2.0 for s in series if s["accept_len"])
    assert "SPEC003" in [d["rule"] for d in json.loads(members["diagnoses.json"])]
    assert "secrets masked: " in recorded["stderr"] and "SECRETVALUE" not in recorded["stderr"]


def test_report_of_the_seed_names_the_override_and_its_fix(recorded, tmp_path) -> None:
    md = spectui("report", str(recorded["bundle"]))
    assert md.returncode == 0, md.stderr
    assert "16 → 2" in md.stdout and "--speculative-num-steps" in md.stdout and "SPEC003" in md.stdout
    assert "SECRETVALUE" not in md.stdout and "hf_xxx" not in md.stdout
    out = tmp_path / "report.json"
    js = spectui("report", str(recorded["bundle"]), "--format", "json", "-o", str(out))
    assert js.returncode == 0, js.stderr
    obj = json.loads(out.read_text())
    assert set(obj) == {"sglang_version", "launch", "requested", "effective", "differences", "diagnoses", "decode",
                        "first_error", "excerpt"}
    assert {"field": "speculative_num_draft_tokens", "requested": 16, "effective": 2} in obj["differences"]
    fixes = [d["fix"] for d in obj["diagnoses"] if d["rule"] == "SPEC003"]
    assert "--speculative-num-steps" in fixes[0]["set"]


def test_report_of_a_live_target_records_in_memory(recorded) -> None:
    out = spectui("report", "local", "--pid", str(recorded["pid"]), "--duration", "0.5", "--format", "json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert {"field": "speculative_num_draft_tokens", "requested": 16, "effective": 2} in obj["differences"]
    assert "SECRETVALUE" not in out.stdout and "hf_xxx" not in out.stdout


def test_check_file_triages_the_bundle_like_the_log(recorded) -> None:
    bundle = spectui("check", str(recorded["bundle"]), "--json")
    assert bundle.returncode == 1, bundle.stderr  # SPEC003 is an error
    got = json.loads(bundle.stdout)
    launch = json.loads(subprocess.run(["tar", "xzOf", str(recorded["bundle"]), "launch.json"],
                                       capture_output=True, check=True).stdout)["command"]
    # The same log, checked directly with the same (masked) launch command, says the same things.
    cut = Path(recorded["root"]) / "as-recorded.log"
    cut.write_bytes(subprocess.run(["tar", "xzOf", str(recorded["bundle"]), "log.txt"],
                                   capture_output=True, check=True).stdout)
    direct = json.loads(spectui("check", str(cut), "--json", "--launch", launch,
                                "--sglang-version", got["sglang_version_guess"] or "0.5.23").stdout)
    assert [d["rule"] for d in got["diagnoses"]] == [d["rule"] for d in direct["diagnoses"]]
    assert "SPEC003" in [d["rule"] for d in got["diagnoses"]]
    assert got["decode"]["accept_len"]["mean"] == pytest.approx(direct["decode"]["accept_len"]["mean"])
    human = spectui("check", str(recorded["bundle"]))  # the release the rules judged with: the recorded one
    version = json.loads(subprocess.run(["tar", "xzOf", str(recorded["bundle"]), "manifest.json"],
                                        capture_output=True, check=True).stdout)["sglang_version"]
    assert f"SGLang: {version} (bundle)" in human.stdout, human.stdout[:600]
