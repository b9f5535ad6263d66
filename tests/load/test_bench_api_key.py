"""A server launched with --api-key: the simulator refuses what SGLang refuses (401 {"error": "Unauthorized"}
for all but OPTIONS, /health* and /metrics*, SGLang's add_api_key_middleware), and spectui's bench and
connect take the key from the server's own command line (never printed)."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
from ops_simlab import SIM_FAST_ENV, SimLab, free_port, wait_health  # noqa: E402

KEY = "sk-test-0123456789abcdef"
EAGLE = ["--model-path", "/models/llama", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
         "/models/draft", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4", "--enable-metrics", "--api-key", KEY]


def test_a_server_with_an_api_key_is_benched_and_connected_with_its_own_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    lab = SimLab(tmp_path, free_port())
    try:
        pid = lab.start(EAGLE, env=SIM_FAST_ENV)
        wait_health(lab.port)
        base = f"http://127.0.0.1:{lab.port}"
        get = lambda path, **kw: httpx.get(base + path, timeout=5, trust_env=False, **kw)  # noqa: E731
        assert get("/health").status_code == 200 and get("/metrics").status_code == 200
        refused = get("/server_info")
        assert refused.status_code == 401 and refused.json() == {"error": "Unauthorized"}
        assert get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert get("/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert '"GET /server_info HTTP/1.1" 401 Unauthorized' in (tmp_path / "server.log").read_text()

        done = subprocess.run([sys.executable, "-m", "spectui.cli", "bench", "local", "--pid", str(pid),
                               "--requests", "4", "--max-tokens", "16", "--warmup", "0", "--json"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["requests"]["ok"] == 4 and out["server"]["sglang_version"]  # /server_info answered
        assert KEY not in done.stdout + done.stderr
        history = (tmp_path / "state" / "spectui" / "bench.jsonl").read_text()
        assert KEY not in history

        from spectui.commands.connect import build_session

        args = argparse.Namespace(target="local", log=None, pid=pid, server_port=None, read_only=True,
                                  ssh_config=None, identity=None, known_hosts=None, accept_new_host_key=False)

        async def version() -> str | None:
            session = await build_session(args)
            try:
                return session.sglang_version
            finally:
                await session.host.close()

        assert asyncio.run(version()) == out["server"]["sglang_version"]  # from /server_info, with the key
    finally:
        lab.cleanup()
