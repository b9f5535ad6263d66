"""One owner for what a secret is (core.secrets) and for reading a flag's value (core.launch): no other
module defines its own, and the shared helpers do what their callers relied on."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from spectui.core.secrets import MASK, mask_argv, masked_flag_value, secret_key, unmask_argv

ROOT = Path(__file__).resolve().parents[2]
OWNERS = {
    re.compile(r"_?(secret_(flag|name|key)(_name)?|secret_values|mask_args|unmask_args|flag_secrets|scrub)$"):
        "spectui/core/secrets.py",
    re.compile(r"_?flag_value$"): "spectui/core/launch/argv.py",
    re.compile(r"_?resolvable_args$"): "spectui/core/launch/argv.py",
}


def _definitions() -> list[tuple[str, str]]:
    """Every module-level function (a method of the same name that calls the owner is not a definition)."""
    found = []
    for path in (ROOT / "spectui").rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((rel, node.name))
    return found


def test_each_idea_is_defined_once_in_its_owner() -> None:
    strays = [f"{rel}: def {name}" for rel, name in _definitions()
              for pattern, owner in OWNERS.items() if pattern.match(name) and rel != owner]
    assert strays == []


def test_secret_key_takes_flags_and_keys() -> None:
    assert secret_key("--api-key") and secret_key("--api-key=sk-1") and secret_key("api_key")
    assert secret_key("hf_token") and secret_key("'ssl_keyfile_password'") and secret_key("--admin-api-key")
    assert not secret_key("speculative_token_map") and not secret_key("--speculative-token-map")
    assert not secret_key("--port") and not secret_key("max_tokens")


def test_masked_flag_value_with_or_without_dashes() -> None:
    assert masked_flag_value("--api-key", "sk-123") == MASK
    assert masked_flag_value("api-key", "sk-123") == MASK
    assert masked_flag_value("--api-key", "") == "" and masked_flag_value("--api-key", None) is None
    assert masked_flag_value("--port", "30000") == "30000"


def test_mask_argv_round_trip() -> None:
    argv = ["--api-key", "sk-live-1", "--port", "30000", "--admin-api-key=adm-2"]
    line, values = mask_argv(argv)
    assert line == "--api-key '***' --port 30000 '--admin-api-key=***'"
    assert values == {"--api-key": "sk-live-1", "--admin-api-key": "adm-2"}
    edited = ["--api-key", MASK, "--port", "31000", "--admin-api-key=***"]
    assert unmask_argv(edited, values) == ["--api-key", "sk-live-1", "--port", "31000", "--admin-api-key=adm-2"]
    assert unmask_argv(["--api-key", "new"], values) == ["--api-key", "new"]  # an edited value stays
