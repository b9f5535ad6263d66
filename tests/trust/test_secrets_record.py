"""Every secret shape the review planted, in a REAL recorded bundle: a simulated server started with
secret flags and an environment holding each shape, its log given lines that carry more, then
`spectui record`, `report` (md and json) and `relaunch --dry-run --json`. No planted value may appear in
any member, in any report, in any plan."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from urllib.parse import quote

import pytest
from ops.ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402

from spectui.core.secrets import display_argv, find_secrets, redact_env  # noqa: E402
from spectui.sim.scenarios import SCENARIOS  # noqa: E402

# name -> (how it is planted, the secret value that must never appear)
ENV = {
    "HF_TOKEN": "hf_PlantedHfTokenValue0123456789abcdefgh",
    "DB_PASS": "plantedDbPass01",
    "API_KEYS": "plantedApiKeys02,plantedApiKeys03",
    "MYTOKEN": "plantedMyToken04",
    "GCP_CREDENTIAL": "plantedCredential05",
    "NPM_AUTH": "plantedNpmAuth06",
    "MY_DB_URL": "postgres://admin:plantedPgPw07@db:5432/app",
    "REDIS_URL": "redis://:plantedRedisPw08@cache:6379/0",
    "CALLBACK_URL": "https://hooks.example/cb?token=plantedQueryTok09&x=1",
    "ERROR_SINK": "https://fedcba9876543210fedcba98765432aa@o11.ingest.sentry.io/3",
    "GH_THING": "github_pat_11PLANTED0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNO",
    "CHAT_HOOK": "xoxb-123456789012-1234567890123-PlantedSlackToken12",
    "MAPS_CONF": "AIzaSyPlanted_0123456789abcdefghijklmno",
    "SESSION_BLOB": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PlantedJwtSignature14xyz",
    "UPSTREAM_HEADER": "Authorization: Basic cGxhbnRlZDpiYXNpYzE1cGxhbnRlZA==",
    "SSH_MATERIAL": "-----BEGIN OPENSSH PRIVATE KEY-----\nPlantedPrivateKeyBody16\n-----END OPENSSH PRIVATE KEY-----",
    "SETTINGS": "password=plantedBarePw17",
    "NOTE_A": "secret=plantedBareSecret18",
    "NOTE_B": "token: plantedBareToken19",
    "NOTE_C": "key=plantedBareKey20abc",
    "BUCKET_ID": "AKIAPLANTED000000025",
    "RANDOM_SALT": "Zx8Qp2Lm9Wv4Rt6Yb1Nc3Kd5",
}
FLAGS = {"--api-key": "plantedApiKey21", "--admin-api-key": "plantedAdminKey22"}
LOG_LINES = ["password=plantedLogPw23", "upstream said Authorization: Bearer plantedBearer24tokenvalue",
             "token: plantedLogToken26", "connecting to redis://:plantedLogRedis27@cache:6379"]

SECRETS = [
    *(v for k, v in ENV.items() if "://" not in v and "=" not in v and ": " not in v and "BEGIN" not in v),
    "plantedPgPw07", "plantedRedisPw08", "plantedQueryTok09", "fedcba9876543210fedcba98765432aa",
    "cGxhbnRlZDpiYXNpYzE1cGxhbnRlZA==", "PlantedPrivateKeyBody16", "plantedBarePw17", "plantedBareSecret18",
    "plantedBareToken19", "plantedBareKey20abc", *FLAGS.values(), "plantedLogPw23", "plantedBearer24tokenvalue",
    "plantedLogToken26", "plantedLogRedis27", "plantedApiKeys02", "plantedApiKeys03",
]


def _leaks(text: str | bytes) -> list[str]:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return sorted({s for s in SECRETS for form in {s, quote(s, safe=""), json.dumps(s)[1:-1]}
                   if form.encode() in data})


def test_the_planted_list_is_complete() -> None:
    assert len(set(SECRETS)) >= 30
    for value in SECRETS:  # each one is a secret by core's definition, found where it was planted
        assert value not in json.dumps(redact_env(ENV)), value if value in "".join(ENV.values()) else None
    for line in LOG_LINES:
        assert find_secrets(line), line
    assert "plantedAdminKey22" not in display_argv(["x", "--admin-api-key", "plantedAdminKey22"])


def spectui(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", *argv], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("secretlab")
    lab = SimLab(root, free_port())
    flags = [*SCENARIOS["silent-override"].flags, *(w for kv in FLAGS.items() for w in kv), "--host", "127.0.0.1"]
    env = {**SIM_FAST_ENV, "SPECTUI_SIM_TRAFFIC": "20", "SPECTUI_SIM_CONCURRENCY": "1", **ENV}
    try:
        # Started as SimLab does, but appending (>>): the lines written below land after the server's own.
        argv = [sys.executable, "-m", "spectui.sim", *flags, "--port", str(lab.port)]
        started = subprocess.run(
            ["sh", "-c", 'cd "$1" && shift && setsid nohup "$@" >> server.log 2>&1 < /dev/null & echo $!',
             "sh", str(root), *argv], capture_output=True, text=True, check=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("SPECTUI_SIM_")}, **env})
        pid = int(started.stdout.strip())
        lab.pgids.add(pid)
        wait_health(lab.port)
        log = root / "server.log"
        deadline = time.monotonic() + 60
        while log.read_text(errors="replace").count("Decode batch") < 3:
            assert time.monotonic() < deadline, "no decode lines from the simulator:\n" + log.read_text()[-2000:]
            time.sleep(0.2)
        with open(log, "a") as fh:  # what a server's own output may carry
            fh.write("".join(line + "\n" for line in LOG_LINES))
        time.sleep(0.5)
        bundle = root / "incident.spectui.tar.gz"
        out = spectui("record", "local", "--pid", str(pid), "-o", str(bundle), "--duration", "1.5",
                      "--interval", "0.5")
        assert out.returncode == 0, out.stderr
        yield {"bundle": bundle, "pid": pid, "stderr": out.stderr, "root": root}
    finally:
        lab.cleanup()


def test_no_planted_value_in_any_member(recorded) -> None:
    plain = gzip.decompress(recorded["bundle"].read_bytes())
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert {"launch.json", "log.txt", "manifest.json"} <= set(members)
    assert b"plantedLogPw23" not in members["log.txt"] and b"password=***" in members["log.txt"]
    launch = json.loads(members["launch.json"])
    assert launch["env"]["MY_DB_URL"] == "postgres://admin:***@db:5432/app"  # masked by value, rest kept
    assert launch["env"]["HF_TOKEN"] == "***" and launch["env"]["SPECTUI_SIM_TRAFFIC"] == "20"
    leaks = {name: _leaks(data) for name, data in members.items()}
    assert {n: v for n, v in leaks.items() if v} == {}
    assert _leaks(plain) == [] and _leaks(recorded["stderr"]) == []


def test_no_planted_value_in_the_reports(recorded, tmp_path) -> None:
    md = spectui("report", str(recorded["bundle"]))
    assert md.returncode == 0, md.stderr
    js = spectui("report", str(recorded["bundle"]), "--format", "json")
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["launch"]
    assert _leaks(md.stdout) == [] and _leaks(js.stdout) == [] and _leaks(md.stderr + js.stderr) == []
    live = spectui("report", "local", "--pid", str(recorded["pid"]), "--duration", "0.5", "--format", "json")
    assert live.returncode == 0, live.stderr
    assert _leaks(live.stdout) == [] and _leaks(live.stderr) == []


def test_no_planted_value_in_a_relaunch_plan(recorded) -> None:
    out = spectui("relaunch", "local", "--pid", str(recorded["pid"]), "--set=--speculative-num-steps=3",
                  "--dry-run", "--json")
    assert out.returncode == 0, out.stderr
    assert _leaks(out.stdout) == [] and _leaks(out.stderr) == []
    if out.returncode == 0:
        assert "--speculative-num-steps" in out.stdout
