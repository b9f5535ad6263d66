"""`spectui flags` end to end, run as a user runs it (a real `python -m spectui` process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "resolution" / "models"

# The seed incident's three launches (/work/shared/seeds/002_*.txt): same target, same draft.
BASE = ("python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --trust-remote-code --tp-size 8 "
        "--speculative-algorithm EAGLE3 --speculative-draft-model-path /data/eagle3/output_100k_sglang/4 ")
LAUNCH_1 = BASE + "--num-speculative-tokens 16"
LAUNCH_2 = BASE + "--speculative-num-draft-tokens 16 --speculative-eagle-topk 1"
LAUNCH_3 = BASE + "--speculative-eagle-topk 1 --speculative-num-draft-tokens 16 --speculative-num-steps 1"
SEED_SSH = (  # launch 3 verbatim, as sent over ssh (message 4344)
    "ssh -o ConnectTimeout=10 root@10.1.230.174 'nohup bash -c \"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "
    "NCCL_PROTO=LL NCCL_ALGO=Ring NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=16777216 "
    "NCCL_NTHREADS=512 ~/ml-env/bin/python3 -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 "
    "--trust-remote-code --tp-size 8 --mem-fraction-static 0.88 --host 0.0.0.0 --port 8000 "
    "--num-continuous-decode-steps 4 --disable-custom-all-reduce --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path /data/eagle3/output_100k_sglang/4 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 16 --speculative-num-steps 1 --log-level info\" > "
    "/data/eagle3/synth_100k/logs/sglang_eagle3_16.log 2>&1 &'\n"
    'echo "Server starting with EAGLE3, 16 draft tokens, num-steps=1"\n'
)


def spectui(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spectui", "flags", *args], capture_output=True, text=True,
                          input=stdin, cwd=ROOT, timeout=60)


def as_json(*args: str, stdin: str | None = None) -> tuple[int, dict]:
    out = spectui("--json", *args, stdin=stdin)
    return out.returncode, json.loads(out.stdout)


def test_seed_1_unrecognized_with_did_you_mean() -> None:
    code, doc = as_json("--sglang-version", "0.5.6.post2", "--", LAUNCH_1)
    assert code == 1 and doc["outcome"] == "argparse_error" and doc["effective"] is None
    assert doc["argparse_error"] == "unrecognized arguments: --num-speculative-tokens 16"
    first = doc["diagnoses"][0]
    assert first["category"] == "unrecognized-argument" and "--speculative-num-steps" in first["title"]
    assert first["fix"]["unset"] == ["--num-speculative-tokens"]


def test_seed_2_assertion_explained() -> None:
    code, doc = as_json("--sglang-version", "0.5.6.post2", "--", LAUNCH_2)
    assert code == 1 and doc["outcome"] == "error"
    assert doc["error"]["type"] == "AssertionError" and doc["error"]["message"] == ""
    assert "add --speculative-num-steps" in doc["error"]["explanation"]
    assert doc["diagnoses"][0]["fix"]["set"]["--speculative-num-steps"] == "15"


def test_seed_3_ok_but_16_draft_tokens_become_2() -> None:
    code, doc = as_json("--sglang-version", "0.5.6.post2", "--", LAUNCH_3)
    assert code == 0 and doc["outcome"] == "ok"
    assert doc["requested"]["speculative_num_draft_tokens"] == 16
    assert doc["effective"]["speculative_num_draft_tokens"] == 2
    assert ("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
            in doc["warnings"])
    override = [d for d in doc["diagnoses"] if d["category"] == "silent-override"]
    assert override and override[0]["title"] == "--speculative-num-draft-tokens 16 becomes 2"


def test_seed_3_names_values_by_server_args_fields() -> None:
    # The seed's `--tp-size 8` is ServerArgs.tp_size (what its server_args= line says), in every view.
    for version in ("0.5.6.post2", "0.5.23"):
        code, doc = as_json("--sglang-version", version, "--", LAUNCH_3)
        assert code == 0 and doc["requested"]["tp_size"] == 8 and doc["effective"]["tp_size"] == 8
        assert "tensor_parallel_size" not in doc["requested"] and "tensor_parallel_size" not in doc["effective"]


def test_seed_3_human_view_calls_it_out() -> None:
    out = spectui("--sglang-version", "0.5.6.post2", "--", LAUNCH_3)
    assert out.returncode == 0
    row = next(line for line in out.stdout.splitlines() if line.strip().startswith("speculative_num_draft_tokens"))
    assert row.split()[1:4] == ["16", "2", "<-"]
    assert "--speculative-num-draft-tokens 16 becomes 2" in out.stdout


def test_seed_ssh_command_from_file_and_stdin(tmp_path: Path) -> None:
    f = tmp_path / "launch.sh"
    f.write_text(SEED_SSH)
    code, doc = as_json("--file", str(f))
    assert code == 0 and doc["effective"]["speculative_num_draft_tokens"] == 2
    assert doc["program"] == "~/ml-env/bin/python3 -m sglang.launch_server"
    assert doc["env"]["NCCL_PROTO"] == "LL"
    code, doc2 = as_json("--file", "-", stdin=SEED_SSH)
    assert code == 0 and doc2["effective"] == doc["effective"]


def test_separate_words_and_env_and_placeholders() -> None:
    code, doc = as_json("--", "NCCL_PROTO=LL", "python", "-m", "sglang.launch_server", "--model-path", "$MODEL",
                        "--port", "$PORT")
    assert code == 0 and doc["env"] == {"NCCL_PROTO": "LL"}
    assert doc["placeholders"] == ["$MODEL", "$PORT"]
    assert any("placeholder" in n for n in doc["notes"])


def test_architecture_from_config_json() -> None:
    # models/ds is the DeepseekV3 config real SGLang resolved in tests/data/resolution.
    code, doc = as_json("--", f"python -m sglang.launch_server --model-path {MODELS / 'ds'} "
                              "--speculative-algorithm NEXTN")
    assert code == 0 and doc["model_arch"] == "DeepseekV3ForCausalLM"
    eff = doc["effective"]
    assert (eff["speculative_num_steps"], eff["speculative_eagle_topk"], eff["speculative_num_draft_tokens"]) == (
        3, 1, 4)
    assert eff["speculative_draft_model_path"] == str(MODELS / "ds")


def test_unknown_architecture_is_said() -> None:
    code, doc = as_json("--", "python -m sglang.launch_server --model-path org/repo --speculative-algorithm EAGLE3 "
                              "--speculative-draft-model-path d")
    assert doc["model_arch"] is None
    assert any("target architecture unknown" in n for n in doc["notes"])


def test_exact_catalogue_is_named() -> None:
    code, doc = as_json("--sglang-version", "0.5.8", "--", LAUNCH_3)
    assert doc["catalogue_version"] == "0.5.8" and doc["sglang_version"] == "0.5.8"
    assert doc["catalogue"]["version"] == "0.5.8" and doc["catalogue"]["exact"] is True
    assert doc["catalogue"]["source"] == "bundled"


def test_release_not_shipped_says_which_catalogue_and_why() -> None:
    code, doc = as_json("--sglang-version", "0.5.30", "--", LAUNCH_3)
    assert doc["catalogue_version"] == "0.5.23" and doc["sglang_version"] == "0.5.30"
    assert doc["catalogue"]["exact"] is False and "0.5.23" in doc["catalogue"]["why"]
    assert "not bundled" in doc["catalogue"]["why"]
    assert any("0.5.23" in n for n in doc["notes"])
    human = subprocess.run([sys.executable, "-m", "spectui", "flags", "--sglang-version", "0.5.30", "--", LAUNCH_3],
                           capture_output=True, text=True)
    assert "catalogue 0.5.23 (not exact" in human.stdout


@pytest.mark.parametrize("args, stdin, words", [
    (["--", "python -m sglang.launch_server --model-path '/m"], None, "unbalanced"),
    (["--"], None, "no launch command"),
    (["--file", "-"], "   \n", "empty launch command"),
    (["--", "vllm serve meta-llama/Llama-3.1-8B --num-speculative-tokens 5"], None, "not an SGLang launch command"),
    (["--sglang-version", "banana", "--", LAUNCH_3], None, "known: 0.4.6 … 0.5.23"),
    (["--file", "/nonexistent/launch.sh"], None, "cannot read"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], stdin: str | None, words: str) -> None:
    out = spectui(*args, stdin=stdin)
    assert out.returncode == 2 and out.stdout == ""
    assert words in out.stderr and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_seed_3_verdict_is_overridden_with_the_override_listed() -> None:
    """#23: an override is never "ok": the verdict says `overridden` and lists what SGLang will use."""
    code, doc = as_json("--sglang-version", "0.5.6.post2", "--", LAUNCH_3)
    assert code == 0 and doc["outcome"] == "ok" and doc["verdict"] == "overridden"
    assert doc["overrides"] == [{"flag": "--speculative-num-draft-tokens", "asked": 16, "effective": 2,
                                 "why": "topk 1 makes it steps + 1 (1 + 1)",
                                 "fix": {"set": {"--speculative-num-steps": "15"}, "unset": []}}]
    human = spectui("--sglang-version", "0.5.6.post2", "--", LAUNCH_3).stdout
    assert "OK: SGLang starts" not in human
    assert "OVERRIDDEN: SGLang starts, but changes 1 value(s) you set" in human
    assert "draft tokens: asked 16, SGLang will use 2, because topk 1 makes it steps + 1" in human
    # Every value as asked (15/1/16): ok, no overrides.
    code, fixed = as_json("--sglang-version", "0.5.6.post2", "--", LAUNCH_3.replace("num-steps 1", "num-steps 15"))
    assert code == 0 and fixed["verdict"] == "ok" and fixed["overrides"] == []


def test_exit_code_follows_a_predicted_start_up_failure() -> None:
    """#23: NEXTN on a Llama target with no draft resolves, but the draft worker finds nothing to load: the
    verdict is a start-up failure (exit 1, the reason printed), not "OK"."""
    cmd = ("--model-arch", "LlamaForCausalLM", "--", "sglang", "serve", "/m", "--speculative-algorithm", "NEXTN")
    out = spectui(*cmd)
    assert out.returncode == 1, out.stdout
    assert "OK: SGLang starts" not in out.stdout
    assert "FAILS at start-up (exit 1): no --speculative-draft-model-path" in out.stdout
    code, doc = as_json(*cmd)
    assert code == 1 and doc["verdict"] == "startup_error" and "no draft to load" in doc["startup_failure"]
    # A target with built-in MTP layers brings its own draft: it starts (exit 0).
    mtp = ("--model-arch", "DeepseekV3ForCausalLM", *cmd[2:])
    code, doc = as_json(*mtp)
    assert code == 0 and doc["verdict"] in ("ok", "overridden") and doc["startup_failure"] is None
