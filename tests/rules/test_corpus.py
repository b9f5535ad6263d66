"""Every real log excerpt in tests/data/corpus gets the category its header's `# symptom:` names.

Each file's header cites its source URL; the log lines below `# ---` are exactly as posted.
crash-other -> crash, assertion-error -> invalid-argument; healthy-decode/startup -> no error-severity
diagnosis; other -> anything that is not an error.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spectui.core.log import Pipeline
from spectui.core.rules import RuleEngine, load_rules, parse_launch

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
RULES, _ = load_rules()
CATEGORY = {"crash-other": "crash", "assertion-error": "invalid-argument"}
NO_ERROR = {"healthy-decode", "startup", "other"}


def read(path: Path) -> tuple[dict[str, str], list[str]]:
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    cut = lines.index("# ---")
    header = {}
    for line in lines[:cut]:
        key, _, value = line[2:].partition(": ")
        header[key] = value
    return header, lines[cut + 1:]


def launch_of(header: dict[str, str]):
    text = header.get("launch", "none")
    if text.startswith("none"):
        return None
    text = re.sub(r" \((?:from|reporter|issue|thread)[^)]*\)$", "", text)
    try:
        return parse_launch(text)
    except Exception:  # a reporter's elided command ("**") that no shell would run
        return None


def diagnose(body: list[str], launch=None):
    engine = RuleEngine(RULES, launch=launch)
    pipeline = Pipeline(engine=engine)
    pipeline.feed_lines(body)
    pipeline.finish()
    return engine.diagnoses


FILES = sorted(CORPUS.glob("*.log"))
CASES = [
    pytest.param(path, with_launch, id=f"{path.stem[:40]}-{'launch' if with_launch else 'log'}")
    for path in FILES
    for with_launch in (False, True)
    if not with_launch or launch_of(read(path)[0]) is not None
]


@pytest.mark.parametrize(("path", "with_launch"), CASES)
def test_corpus_file_gets_its_category(path: Path, with_launch: bool) -> None:
    header, body = read(path)
    launch = launch_of(header) if with_launch else None
    symptom = header["symptom"]
    diagnoses = diagnose(body, launch)
    summary = [(d.rule, d.category, d.severity) for d in diagnoses]
    if symptom in NO_ERROR:
        assert not [d for d in diagnoses if d.severity == "error"], f"{header['source']}: {summary}"
    else:
        assert diagnoses, f"{header['source']}: nothing fired"
        assert diagnoses[0].category == CATEGORY.get(symptom, symptom), f"{header['source']}: {summary}"


def test_every_corpus_symptom_is_known() -> None:
    known = set(CATEGORY) | NO_ERROR | {"low-accept-length", "silent-override", "unrecognized-argument",
                                        "cuda-graph", "weight-load", "oom", "nccl", "hidden-state-mismatch"}
    assert {read(p)[0]["symptom"] for p in FILES} <= known


HEALTHY = [p for p in FILES if read(p)[0]["symptom"] in NO_ERROR]


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.2", "0.5.10", "0.5.15", "0.5.19", "0.5.23"])
@pytest.mark.parametrize("path", HEALTHY, ids=[p.stem[:40] for p in HEALTHY])
def test_healthy_log_gets_no_error_whichever_release_judges_it(path: Path, version: str) -> None:
    # No new false alarm: judged as any release (its own catalogue and rules), with and without its launch.
    header, body = read(path)
    for launch in {None, launch_of(header)}:
        engine = RuleEngine(RULES, launch=launch, version=version)
        pipeline = Pipeline(engine=engine)
        pipeline.feed_lines(body)
        pipeline.finish()
        errors = [(d.rule, d.title) for d in engine.diagnoses if d.severity == "error"]
        assert not errors, f"{header['source']} as {version}: {errors}"


def test_eagle3_half_the_ceiling_is_a_warning_not_an_error() -> None:
    # tests/data/corpus/051 (SpecForge PR #269): EAGLE3 3/1/4 at accept len ~2: low for the depth (SPEC031), a
    # warning, since the server is healthy.
    path = next(p for p in FILES if p.name.startswith("051"))
    _header, body = read(path)
    launch = parse_launch("--model-path Qwen/Qwen2.5-7B-Instruct --speculative-algorithm EAGLE3 "
                          "--speculative-draft-model-path d --speculative-eagle-topk 1 --speculative-num-steps 3 "
                          "--speculative-num-draft-tokens 4")
    diagnoses = diagnose(body, launch)
    spec031 = [d for d in diagnoses if d.rule == "SPEC031"]
    assert spec031 and spec031[0].severity == "warning"
    assert not [d for d in diagnoses if d.severity == "error"]
