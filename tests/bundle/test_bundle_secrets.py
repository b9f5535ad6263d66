"""No secret value leaves in any byte of any member, whatever the caller passes."""

from __future__ import annotations

import tarfile
from pathlib import Path
from urllib.parse import quote

from bundle_leaky import API_KEY, ARGV, HF_TOKEN, SECRETS, URL_PASS, leaky_parts

from spectui.bundle import read_bundle, render_report, write_bundle
from spectui.bundle.masking import Masker


def _unpacked(path: Path, into: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        tar.extractall(into, filter="data")
    return {str(p.relative_to(into)): p.read_bytes() for p in sorted(into.rglob("*")) if p.is_file()}


def _assert_clean(blobs: dict[str, bytes]) -> None:
    for name, data in blobs.items():
        for secret in (*SECRETS, "topsecret-value-1", "db-pass-value-2"):
            for form in {secret, quote(secret, safe="")}:
                assert form.encode() not in data, f"{name} holds a secret value"


def test_no_secret_value_in_any_member_byte_for_byte(tmp_path: Path) -> None:
    bundle = tmp_path / "incident.spectui.tar.gz"
    write_bundle(bundle, leaky_parts())
    blobs = _unpacked(bundle, tmp_path / "out")
    assert {"manifest.json", "log.txt", "launch.json", "server_info/0000.json", "metrics/0000.prom"} <= set(blobs)
    _assert_clean(blobs)
    raw = bundle.read_bytes()  # and the compressed file as a whole, decompressed
    import gzip

    _assert_clean({"archive": gzip.decompress(raw)})


def test_manifest_names_what_was_masked_never_values(tmp_path: Path) -> None:
    manifest = write_bundle(tmp_path / "b.tar.gz", leaky_parts())
    names = set(manifest.masked_names)
    assert {"--api-key", "HF_TOKEN", "OPENAI_API_KEY", "MY_SECRET_THING", "DBPASSWORD", "url-password"} <= names
    where = {m["name"]: m["members"] for m in manifest.masked}
    assert "log.txt" in where["HF_TOKEN"] and "server_info/0000.json" in where["HF_TOKEN"]
    assert "launch.json" in where["--api-key"]


def test_masked_members_keep_everything_else(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    write_bundle(path, leaky_parts())
    b = read_bundle(path)
    assert b.launch["env"]["TOKENIZERS_PARALLELISM"] == "false"
    assert b.launch["env"]["HF_TOKEN"] == "***" and b.launch["env"]["CUDA_VISIBLE_DEVICES"] == "0"
    argv = b.launch["argv"]
    assert argv[argv.index("--api-key") + 1] == "***"
    assert argv[argv.index("--speculative-token-map") + 1] == "/maps/tok.pt"  # not a secret
    assert "speculative_token_map='/maps/tok.pt'" in b.log_text()
    assert "api_key='***'" in b.log_text() and "https://bob:***@hub.example/x" in b.log_text()
    assert "#token: 100" in b.log_text()  # '#token:' is not a secret assignment
    assert b.server_info[0].data["api_key"] == "***"
    assert b.server_info[0].data["speculative_num_draft_tokens"] == 2
    assert b.requested["api_key"] == "***"


def test_string_command_and_short_key_are_masked_in_place(tmp_path: Path) -> None:
    cmd = f"HF_TOKEN={HF_TOKEN} python -m sglang.launch_server --api-key=abc --model /m"
    log = b"[2025-06-01 10:00:00] server_args=ServerArgs(api_key='abc', model_path='/m')\nabc stays here\n"
    parts = leaky_parts(launch={"command": cmd, "env": {}}, log=log)
    path = tmp_path / "b.tar.gz"
    write_bundle(path, parts)
    b = read_bundle(path)
    assert HF_TOKEN not in b.launch["command"] and "--api-key=***" in b.launch["command"]
    assert "api_key='***'" in b.log_text()
    assert "abc stays here" in b.log_text()  # a 3-character value is masked where it stands only


def test_report_of_a_live_target_masks_its_launch() -> None:
    check = {"diagnoses": [], "decode": None, "errors": [], "sglang_version_guess": "0.5.4"}
    launch = {"command": " ".join(ARGV), "env": {"HF_TOKEN": HF_TOKEN}}
    log = f"[2025-06-01 10:00:00] server_args=ServerArgs(api_key='{API_KEY}')\n"
    for fmt in ("md", "json"):
        text = render_report(check, format=fmt, launch=launch, log_text=log, flags={"requested": {"api_key": API_KEY}})
        assert API_KEY not in text and HF_TOKEN not in text


def test_masker_rules() -> None:
    m = Masker()
    m.harvest_env({"A_TOKEN": "tok-value-123", "TOKENIZERS_PARALLELISM": "false", "PROXY": f"http://u:{URL_PASS}@p"})
    m.harvest_command(["x", "--hf-token", "hf-value-456", "--speculative-token-map", "/map"])
    out = m.scrub_text(f"tok-value-123 hf-value-456 {URL_PASS} /map false #new-token: 8192 max_total_num_tokens=8192")
    assert out == "*** *** *** /map false #new-token: 8192 max_total_num_tokens=8192"
