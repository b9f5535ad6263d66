"""#24: every `spectui …` example in README.md's ```bash blocks is exercised. Those that can run here run for
real (against a temp copy of a recorded simulator log, small real checkpoints, a bundle recorded from that
log): no usage error, no traceback, the exit status they document. The rest need a host, a running server
or a terminal and are listed by name in NEEDS_ELSEWHERE; they are parsed by spectui's own argparse (the
subcommand's arguments, and the TARGET). A README example in neither list fails the test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from spectui import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SIM_LOG = ROOT / "tests" / "ui" / "data" / "silent-override-sim.log"


def readme_examples() -> list[str]:
    """Each spectui command of the ```bash blocks: continuation lines joined, the comment dropped, the part
    of a pipeline or `&&` list that runs spectui, up to a redirection."""
    text = README.read_text(encoding="utf-8")
    out: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            lex = shlex.shlex(line, posix=True, punctuation_chars=True)
            lex.whitespace_split, lex.commentors = True, "#"
            words = list(lex)
            segment: list[str] = []
            for word in [*words, "|"]:
                if word in ("|", "&&", ";", ">", ">>", "2>", "&", ">&"):
                    if segment[:1] == ["spectui"]:
                        out.append(shlex.join(segment[1:]))
                    segment = [] if word in ("|", "&&", ";", "&") else ["<redirect>"]
                elif segment[:1] != ["<redirect>"]:
                    segment.append(word)
    return out


# Examples that run here, with the exit statuses they may end with (1 = an error-severity finding, as
# documented), and, for `check -`, the file on stdin.
RUN_HERE: dict[str, tuple[set[int], str | None]] = {
    "demo --list": ({0}, None),
    "demo --headless --scenario bad-flag": ({1}, None),  # SGLang refuses the flag: the demo says so, exit 1
    "check server.log": ({0, 1}, None),
    "check server.log --json": ({0, 1}, None),
    "check -": ({0, 1}, "server.log"),
    "check server.log --launch 'python -m sglang.launch_server --model-path /models/llama --tp 8' "
    "--sglang-version 0.5.6 --rules ./my-rules": ({0, 1}, None),
    "flags -- python3 -m sglang.launch_server --model-path /models/llama --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path /models/eagle3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 16 "
    "--speculative-num-steps 1": ({0, 1}, None),
    "flags --sglang-version 0.5.6 --json --file launch.sh": ({0, 1}, None),
    "flags --model-arch DeepseekV3ForCausalLM -- 'sglang serve /m --speculative-algorithm NEXTN'": ({0, 1}, None),
    "advise --observed 1:1.81 --observed 3:2.80": ({0}, None),
    "inspect --draft ./eagle3 --model ./Llama-3.1-8B --launch '--speculative-algorithm EAGLE3 "
    "--speculative-num-steps 3'": ({0}, None),
    "check server.log --launch 'python -m sglang.launch_server --model-path ./Llama-3.1-8B "
    "--speculative-algorithm EAGLE3 --speculative-draft-model-path ./eagle3 --speculative-num-steps 3' "
    "--inspect": ({0, 1}, None),
    "report incident.tar.gz": ({0}, None),
    "check incident.tar.gz": ({0, 1}, None),
    "rules list": ({0}, None),
    "rules list --json": ({0}, None),
    "rules explain SPEC003": ({0}, None),
    "rules test": ({0, 1}, None),  # 1 = a rule's own example fails (tests/rules pins them)
    "rules test --rules ./my-rules": ({0}, None),
}

# Why each of the others does not run here; they are parsed.
NEEDS_ELSEWHERE: dict[str, str] = {
    "demo": "the cockpit (a terminal)",
    "connect root@gpu1": "an SSH host",
    "connect root@gpu1:/data/logs/sglang.log": "an SSH host",
    "connect gpu1 --pid 4242 --read-only": "an SSH host",
    "connect ./server.log": "the cockpit (a terminal)",
    "demo --scenario silent-override": "the cockpit (a terminal)",
    "connect gpu1 gpu2 gpu3": "SSH hosts",
    "connect --prometheus http://prom:9090": "a Prometheus",
    "connect incident.tar.gz --speed 20": "the cockpit (a terminal)",
    "demo --headless --scenario silent-override --duration 20": "20 s of a simulated server",
    "bench root@gpu1 --concurrency 4 --requests 64 --max-tokens 256 --prompts code": "an SSH host",
    "bench local --server-port 30000 --duration 60 --rate 2 --baseline-tps 90 --json": "a server on port 30000",
    "bench root@gpu1 --baseline --requests 64": "an SSH host",
    "bench local --server-port 30000 --dataset-name random --random-input-len 1024 --random-output-len 256 "
    "--ignore-eos --num-prompts 200 --max-concurrency 32 --output-file runs.jsonl --goodput ttft:500 tpot:50":
        "a server on port 30000",
    "bench local --server-port 30000 --dataset-name generated-shared-prefix --gsp-num-turns 4 --gsp-num-groups 8 "
    "--gsp-prompts-per-group 4 --max-concurrency 8": "a server on port 30000",
    "sweep root@gpu1 --grid speculative-num-steps=1,3,5,7 --grid speculative-eagle-topk=1 "
    "--grid speculative-num-draft-tokens=2,4,6,8 --requests 32 --concurrency 4 --dry-run": "an SSH host",
    "sweep local --grid speculative-num-steps=2,4 --grid env:SPECTUI_SIM_FAULT=-,oom-at-capture --yes --json":
        "a local server to relaunch",
    "sweep local --resume '~/.local/state/spectui/sweeps/….jsonl'": "a sweep's journal",
    "advise root@gpu1 --json": "an SSH host",
    "advise --sweep sweep.jsonl --baseline-tps 90": "a sweep's journal",
    "serve root@gpu1 --port 8000": "an SSH host",
    "serve local --pid 4242 --port 0": "a local server",
    "inspect root@gpu1": "an SSH host",
    "record root@gpu1 -o incident.tar.gz --duration 60": "an SSH host",
    "report root@gpu1 --format json": "an SSH host",
    "fleet --prometheus http://prom:9090 --selector 'job=\"sglang\"'": "a Prometheus",
    "fleet --prometheus http://prom:9090 --watch --json": "a Prometheus",
    "relaunch root@gpu1 --set speculative-num-steps=15 --dry-run": "an SSH host",
    "relaunch root@gpu1 --set-env SGLANG_ENABLE_SPEC_V2=1 --unset-env NCCL_PROTO --dry-run": "an SSH host",
    "relaunch root@gpu1 --set speculative-num-steps=15": "an SSH host",
    "relaunch local --pid 4242 --unset speculative-num-draft-tokens --yes --json --observe 30": "a local server",
    "relaunch root@node0 root@node1 --set speculative-num-steps=5 --dry-run": "SSH hosts",
    "relaunch root@node0 root@node1 --set speculative-num-steps=5 --yes --json": "SSH hosts",
    "relaunch root@p1:/logs/prefill.log root@d1:/logs/decode.log --set speculative-num-steps=5": "SSH hosts",
    "watch root@gpu1 --jsonl": "an SSH host",
    "watch root@gpu1 --pid 4242": "an SSH host",
    "watch gpu1:2222:/data/logs/sglang.log --raw": "an SSH host",
    "watch ./server.log --from-start --duration 60": "60 s of following",
    "watch - --jsonl": "a stream on stdin until it ends",
}

EXAMPLES = readme_examples()


def test_every_readme_example_is_classified() -> None:
    assert len(EXAMPLES) > 40  # the extraction works
    unknown = [e for e in EXAMPLES if e not in RUN_HERE and e not in NEEDS_ELSEWHERE]
    assert unknown == [], "new README examples: add them to RUN_HERE or NEEDS_ELSEWHERE"
    stale = [e for e in [*RUN_HERE, *NEEDS_ELSEWHERE] if e not in EXAMPLES]
    assert stale == [], "examples no longer in the README"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e in NEEDS_ELSEWHERE])
def test_the_others_parse(example: str) -> None:
    from spectui.sources.target import parse_target

    argv = shlex.split(example)
    parser = cli.build_parser(argv[0])
    args = parser.parse_args(argv)  # SystemExit(2) on a usage error
    for target in [getattr(args, "target", None), *(getattr(args, "targets", None) or [])]:
        if isinstance(target, str) and target != "-":
            parse_target(target)  # raises UsageError on a TARGET no command accepts


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder holding what the examples name: server.log, my-rules/, launch.sh, ./eagle3 and
    ./Llama-3.1-8B (small real checkpoints) and incident.tar.gz (recorded from server.log)."""
    from draftckpt import draft_config, eagle3_tensors, write_ckpt, write_target

    work = tmp_path_factory.mktemp("readme")
    lines = [ln for ln in SIM_LOG.read_text(encoding="utf-8").splitlines() if not ln.startswith("# ")]
    (work / "server.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "my-rules").mkdir()
    (work / "launch.sh").write_text("python -m sglang.launch_server --model-path /m --speculative-algorithm "
                                    "EAGLE3 --speculative-draft-model-path /d --speculative-num-steps 3\n")
    write_target(work / "Llama-3.1-8B")
    write_ckpt(work / "eagle3", draft_config(), eagle3_tensors())
    rec = run(["record", "./server.log", "-o", "incident.tar.gz", "--duration", "0"], work)
    assert rec.returncode == 0, rec.stderr
    return work


def run(argv: list[str], cwd: Path, stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with open(stdin or os.devnull, "rb") as fh:
        return subprocess.run([sys.executable, "-m", "spectui", *argv], cwd=cwd, stdin=fh, capture_output=True,
                              text=True, timeout=120, env=env)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e in RUN_HERE])
def test_the_local_examples_run(example: str, workdir: Path) -> None:
    allowed, stdin = RUN_HERE[example]
    out = run(shlex.split(example), workdir, workdir / stdin if stdin else None)
    assert out.returncode in allowed, (out.returncode, out.stdout[-2000:], out.stderr[-2000:])
    assert "Traceback" not in out.stderr and "usage:" not in out.stderr
    if "--json" in example:
        import json

        json.loads(out.stdout)  # one JSON document, as CONTRACTS.md says
    if example == "report incident.tar.gz":
        assert out.stdout.startswith("#") or "server.log" in out.stdout
