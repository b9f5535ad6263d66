"""Secret masking for display: values of secret-looking flags (`--api-key`) and environment variables
(HF_TOKEN …) never reach a terminal, a plan, an error message or the launch history."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

# Whole words of a name, so HF_TOKEN and OPENAI_API_KEY match but TOKENIZERS_PARALLELISM does not.
SECRET_WORDS = frozenset({"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "APIKEY"})


def _secret_env(name: str) -> bool:
    return bool(SECRET_WORDS & set(name.upper().split("_")))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Environment for display: values of secret-looking variables (HF_TOKEN …) replaced."""
    return {k: ("***" if _secret_env(k) else v) for k, v in env.items()}


def _secret_flag(word: str) -> bool:
    # The last word decides: --api-key, --admin-api-key, --hf-token; not --speculative-token-map.
    return word.startswith("--") and word.split("=", 1)[0].upper().split("-")[-1] in SECRET_WORDS


def display_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """One argv as a shell line for display and history: values of secret-looking flags (`--api-key`)
    and of secret environment variables (HF_TOKEN) are masked wherever they occur."""
    secrets = {f"{k}={v}": f"{k}=***" for k, v in (env or {}).items() if _secret_env(k)}
    shown: list[str] = []
    for i, word in enumerate(argv):
        if i and _secret_flag(argv[i - 1]) and "=" not in argv[i - 1] and not word.startswith("--"):
            word = "***"
        elif _secret_flag(word) and "=" in word:
            word = word.split("=", 1)[0] + "=***"
        shown.append(secrets.get(word, word))
    return shlex.join(shown)
