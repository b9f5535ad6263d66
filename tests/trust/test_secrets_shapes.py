"""core.secrets, the one definition of a secret: each reviewed shape is found, SGLang's own text is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.secrets import (
    display_argv,
    find_secrets,
    flag_secrets,
    mask_text,
    redact_env,
    secret_flag,
    secret_name,
    secret_values,
)

CORPUS = Path("/work/shared/corpus/sglang-logs")
if not CORPUS.is_dir():
    CORPUS = Path(__file__).parents[2].parent / "shared" / "corpus" / "sglang-logs"

SHAPES = [  # (text, the secret in it)
    ("password=hunter2secret", "hunter2secret"),
    ("secret=abcdefgh1", "abcdefgh1"),
    ("token: abc123secretvalue", "abc123secretvalue"),
    ("key=verysecretkey123", "verysecretkey123"),
    ("redis://:pw12345@host:6379", "pw12345"),
    ("postgres://admin:pgpass99@db/x", "pgpass99"),
    ("https://x/y?token=abcdef123456&x=1", "abcdef123456"),
    ("GET /v1?api_key=zzzz9999yyyy HTTP/1.1", "zzzz9999yyyy"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("Authorization: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    ("maps AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789", "github_pat_11ABCDEFG"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0"),
    ("https://abcdef0123456789abcdef0123456789@o123.ingest.sentry.io/456", "abcdef0123456789abcdef0123456789"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"),
    ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("server_args=ServerArgs(api_key='sk-test-Zq8v', hf_token=None)", "sk-test-Zq8v"),
    ('{"api_key": "json-secret-1"}', "json-secret-1"),
    ("--api-key sk-abc --admin-api-key=adminpw123", "adminpw123"),
    ("--ssl-keyfile-password pemsecret", "pemsecret"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
]


@pytest.mark.parametrize(("text", "secret"), SHAPES)
def test_each_shape_is_masked(text: str, secret: str) -> None:
    out = mask_text(text)
    assert secret not in out and "***" in out, out


NOT_SECRETS = [
    "[2025-06-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, "
    "accept len: 1.60, gen throughput (token/s): 50.00, #queue-req: 0",
    "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00",
    "server_args=ServerArgs(speculative_token_map='/m.pt', max_total_tokens=100, tokenizer_path='/t', hf_token=None)",
    "--speculative-token-map /maps/tok.pt --bucket-time-to-first-token 0.1 0.2 --tokenizer-path /t",
    "token: 5046",
    "http://127.0.0.1:30000/health?x=1",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_sglang_text_is_left_alone(text: str) -> None:
    assert find_secrets(text) == [] and mask_text(text) == text


def test_no_false_positive_in_the_real_log_corpus() -> None:
    logs = sorted(CORPUS.glob("*.log"))
    if not logs:
        pytest.skip("no corpus")
    text = "".join(p.read_text(errors="replace") for p in logs)
    assert [text[f.start:f.end] for f in find_secrets(text)] == []


def test_names_flags_and_environments() -> None:
    for name in ("HF_TOKEN", "DB_PASS", "API_KEYS", "MYTOKEN", "GCP_CREDENTIAL", "NPM_AUTH", "SENTRY_DSN",
                 "api_key", "ssl_keyfile_password", "DBPASSWORD", "OPENAI_API_KEY"):
        assert secret_name(name), name
    for name in ("TOKENIZERS_PARALLELISM", "MAX_TOKENS", "PWD", "speculative_token_map", "max_total_tokens",
                 "CUDA_VISIBLE_DEVICES", "SGLANG_ENABLE_TORCH_COMPILE", "tokenizer_path"):
        assert not secret_name(name), name
    assert secret_flag("--api-key") and secret_flag("--admin-api-key=x") and secret_flag("--ssl-keyfile-password")
    assert not secret_flag("--speculative-token-map") and not secret_flag("--bucket-time-to-first-token")
    env = {"MY_DB_URL": "postgres://a:pgpw1234@h/x", "SALT": "Zx8Qp2Lm9Wv4Rt6Yb1Nc3Kd5", "PATH": "/usr/bin:/bin",
           "TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": "hf_x"}
    assert redact_env(env) == {"MY_DB_URL": "postgres://a:***@h/x", "SALT": "***", "PATH": "/usr/bin:/bin",
                               "TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": "***"}
    kept = {"MODEL": "meta-llama/Llama-3.1-8B-Instruct", "DRAFT": "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B",
            "PKG": "nvidia-cuda-runtime-cu12==12.4.127", "LANG": "en_US.UTF-8", "CUDA_HOME": "/usr/local/cuda-12.4"}
    assert redact_env(kept) == kept  # model ids, versions and paths are not high-entropy secrets
    argv = ["python", "-m", "sglang.launch_server", "--api-key", "k1234", "--admin-api-key=a5678",
            "--model-path", "/m", "HF_HOME=/h", "URL=redis://:rpw999@c"]
    assert flag_secrets(argv) == {"--api-key": "k1234", "--admin-api-key": "a5678"}
    shown = display_argv(argv)
    assert "k1234" not in shown and "a5678" not in shown and "rpw999" not in shown and "/m" in shown
    assert set(secret_values(argv, env)) >= {"k1234", "a5678", "rpw999", "pgpw1234", "Zx8Qp2Lm9Wv4Rt6Yb1Nc3Kd5"}
