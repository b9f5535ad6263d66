"""Shared bundle test data: a launch that leaks an API key and an HF token everywhere it can."""

from __future__ import annotations

from spectui.bundle import BundleParts

API_KEY = "sk-test-Zq8v3LmN1pR7xW"
HF_TOKEN = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
URL_PASS = "s3cr3tPa55"
SECRETS = (API_KEY, HF_TOKEN, URL_PASS)

ARGV = [
    "python3", "-m", "sglang.launch_server", "--model-path", "/models/llama", "--api-key", API_KEY,
    "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/d",
    "--speculative-num-steps", "1", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16",
    "--speculative-token-map", "/maps/tok.pt", "--port", "30000",
]


def log_bytes(decode_lines: int = 30) -> bytes:
    lines = [
        "[2025-06-01 10:00:00] Using HF_TOKEN=" + HF_TOKEN + " from the environment",
        "[2025-06-01 10:00:01] server_args=ServerArgs(model_path='/models/llama', api_key='" + API_KEY
        + "', speculative_num_draft_tokens=16, speculative_token_map='/maps/tok.pt', hf_token=None)",
        "[2025-06-01 10:00:02 TP0] speculative_num_draft_tokens is adjusted to speculative_num_steps + 1",
        "[2025-06-01 10:00:03 TP0] Downloading with token " + HF_TOKEN + " from https://bob:" + URL_PASS
        + "@hub.example/x",
        "[2025-06-01 10:00:04 TP0] request header Authorization: Bearer " + API_KEY,
    ]
    for i in range(decode_lines):
        lines.append(
            f"[2025-06-01 10:01:{i % 60:02d} TP0] Decode batch. #running-req: 1, #token: {100 + i}, "
            f"accept len: 1.6{i % 10}, gen throughput (token/s): 5{i % 10}.0, #queue-req: 0, "
        )
    lines += [
        "[2025-06-01 10:02:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/scheduler.py", line 100, in event_loop',
        "    self.run_batch()",
        "AssertionError: draft tokens mismatch (key " + API_KEY + ")",
        "[2025-06-01 10:02:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    return ("\n".join(lines) + "\n").encode()


def leaky_parts(**overrides: object) -> BundleParts:
    env = {"HF_TOKEN": HF_TOKEN, "OPENAI_API_KEY": API_KEY, "TOKENIZERS_PARALLELISM": "false",
           "MY_SECRET_THING": "topsecret-value-1", "DBPASSWORD": "db-pass-value-2", "CUDA_VISIBLE_DEVICES": "0"}
    parts = BundleParts(
        target="gpu-box:/var/log/sglang.log",
        sglang_version="0.5.4",
        log=log_bytes(),
        launch={"command": ARGV, "env": env, "cwd": "/srv", "pid": 4242},
        config={
            "requested": {"speculative_num_draft_tokens": 16, "speculative_eagle_topk": 1,
                          "speculative_num_steps": 1, "api_key": API_KEY},
            "effective": {"speculative_num_draft_tokens": 2, "speculative_eagle_topk": 1, "speculative_num_steps": 1},
            "verdict": {"outcome": "ok", "warnings": ["speculative_num_draft_tokens is adjusted"]},
        },
        server_info=[
            (1748772000.0, {"api_key": API_KEY, "hf_token": HF_TOKEN, "speculative_num_draft_tokens": 2,
                            "note": f"loaded with {HF_TOKEN}", "internal_states": [{"avg_spec_accept_length": 1.6}]}),
            (1748772010.0, {"api_key": API_KEY, "speculative_num_draft_tokens": 2}),
        ],
        metrics=[
            (1748772000.0, '# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{key="'
             + API_KEY + '"} 1.6\n'),
            (1748772010.0, b"sglang:gen_throughput 55.0\n"),
        ],
        series=[{"t": 1748772000.0 + i, "accept_len": 1.6 + i / 100, "tok_s": 55.0 + i, "running": 1, "queued": 0}
                for i in range(10)],
        diagnoses=[{
            "rule": "SPEC003", "category": "silent-override", "severity": "error",
            "title": "speculative_num_draft_tokens 16 was overridden to 2",
            "evidence": ["line 3: speculative_num_draft_tokens is adjusted to speculative_num_steps + 1"],
            "fix": {"set": {"--speculative-num-steps": "15"}, "unset": []},
        }],
        history={"launches": [{"command": " ".join(ARGV), "t": 1748771990.0}],
                 "bench": [{"output_tokens_per_s": 1332.0, "baseline": {"output_tokens_per_s": 1010.0,
                                                                        "source": "measured"},
                            "speedup": {"output_tokens_per_s": 1.32}, "spec": {"accept_len": 1.6}}]},
        inspect={"draft": {"path": "/d", "format": "sglang-eagle3"}, "findings": []},
        gpu=[{"t": 1748772000.0 + i, "index": g, "name": "NVIDIA H100 80GB HBM3", "memory_used_mib": 70000 + i,
              "memory_total_mib": 81559} for i in range(3) for g in range(2)],
        created=1748772100.0,
    )
    for key, value in overrides.items():
        setattr(parts, key, value)
    return parts

