"""The host's own SGLang is ground truth: for a dozen flag edits of a running real server (valid, refused by
argparse, refused by SGLang's own checks, silently changed), spectui's relaunch verdict equals what the real
server does when it is started with them. The kit reports `0.5.16.dev0+g2f14d6c6`, a source build: spectui
judges it with the host's own argparse and resolution, and says so (never 0.5.16's rules, which refuse NGRAM
on the CPU)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from realkit import RealServer, prefix

from spectui.core.log import parse_server_args
from spectui.ops.relaunch.plan import Edits
from spectui.ops.relaunch.run import prepare
from spectui.sources.local import LocalHost

# (edit as `relaunch --set/--unset`, what the real server does: ok | overridden | argparse_error | error,
#  and for ok/overridden the effective values it runs with)
CASES = [
    (["speculative-num-draft-tokens=2"], "ok", {"speculative_num_draft_tokens": 2}),
    (["speculative-eagle-topk=4"], "overridden", {"speculative_eagle_topk": 10}),  # NGRAM: silently 10
    (["max-running-requests=8"], "ok", {"max_running_requests": 8}),
    (["-speculative-num-draft-tokens"], "ok", {"speculative_num_draft_tokens": 12}),  # NGRAM's default
    (["speculative-num-draft-tokens=abc"], "argparse_error", None),
    (["speculative-algorithm=MEDUSA"], "error", None),  # no argparse choices here: "Unknown … algorithm name"
    (["speculative-num-stepz=3"], "argparse_error", None),
    (["speculative-algorithm=EAGLE"], "error", None),  # no num steps: SGLang's bare AssertionError
    (["speculative-algorithm=EAGLE", "speculative-num-steps=3", "speculative-eagle-topk=1"], "ok",
     {"speculative_num_draft_tokens": 4, "speculative_num_steps": 3}),  # no draft: the target drafts itself
    (["speculative-algorithm=EAGLE", "speculative-num-steps=1", "speculative-eagle-topk=1"], "overridden",
     {"speculative_num_draft_tokens": 2}),  # the seed override: draft tokens 4 -> steps + 1
    (["speculative-algorithm=EAGLE", "speculative-num-steps=3", "speculative-eagle-topk=2",
      "speculative-use-rejection-sampling"], "error", None),
]


def edits_of(words: list[str]) -> Edits:
    sets = [w for w in words if not w.startswith("-")]
    unsets = [w[1:] for w in words if w.startswith("-")]
    return Edits.from_cli(sets, unsets)


@pytest.fixture(scope="module")
def base(kit_server: RealServer) -> RealServer:
    return kit_server


def real_outcome(log: Path, proc: subprocess.Popen[bytes], timeout: float = 240) -> tuple[str, dict | None]:
    """What the real server did: its server_args line (then it is stopped), or how it failed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = log.read_text(errors="replace") if log.exists() else ""
        m = re.search(r"server_args=(ServerArgs\(.*\)|\{.*\})\s*$", text, re.MULTILINE)
        if m:
            return "started", parse_server_args(m.group(1))
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            return ("argparse_error" if "error:" in text and "usage:" in text else "error"), None
        time.sleep(0.3)
    raise TimeoutError(f"no outcome in {log}")


def start_with(root: Path, argv: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
    from realkit import server_env

    root.mkdir(parents=True, exist_ok=True)
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=root, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=server_env(), start_new_session=True)
    return proc, log


def stop(proc: subprocess.Popen[bytes]) -> None:
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


async def test_every_verdict_equals_what_the_real_server_does(base: RealServer, tmp_path: Path) -> None:
    (pid,) = base.main_pids()
    host = LocalHost()
    plans = await asyncio.gather(*(prepare(host, edits_of(words), pid=pid) for words, _, _ in CASES))
    mismatches = []
    for batch in range(0, len(CASES), 4):  # the real starts, four at a time (each imports torch)
        running = []
        for i in range(batch, min(batch + 4, len(CASES))):
            port_free = 40100 + i
            argv = [a if a != str(base.port) else str(port_free) for a in plans[i].new.argv]
            running.append((i, *start_with(tmp_path / f"case{i}", argv)))
        for i, proc, log in running:
            try:
                did, effective = real_outcome(log, proc)
            finally:
                stop(proc)
            words, expected, values = CASES[i]
            res = plans[i].resolution
            said = res.verdict
            # The real server's outcome, as spectui names it: a start whose values differ from those asked
            # is an override; the test's own table says which values it runs with.
            if did == "started":
                assert effective is not None
                for field, want in (values or {}).items():
                    assert effective.get(field) == want, (words, field, effective.get(field))
                real = "overridden" if res.overrides or expected == "overridden" else "ok"
            else:
                real = did
            assert real == expected, (words, did, log.read_text(errors="replace")[-1500:])
            if said != real:
                mismatches.append((words, said, real, plans[i].verdict_line))
            assert "host's own SGLang" in plans[i].version_note, plans[i].version_note
    assert not mismatches, mismatches


def test_relaunch_dry_run_judges_the_source_build_with_its_own_sglang(base: RealServer) -> None:
    """The issue's case: 0.5.16's rules refused `--speculative-num-draft-tokens 2` ("Ngram speculative decoding
    only supports CUDA device"); this CPU build runs NGRAM, and its own resolution says so."""
    (pid,) = base.main_pids()
    out = subprocess.run([sys.executable, "-m", "spectui.cli", "relaunch", "local", "--pid", str(pid), "--set",
                          "speculative-num-draft-tokens=2", "--dry-run", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-1500:]
    plan = json.loads(out.stdout)
    text = json.dumps(plan)
    assert "only supports CUDA" not in text
    assert "host's own SGLang" in text
    assert str(prefix()) in text  # the real command line it would start
