"""Every real log excerpt in tests/data/corpus gets the category its header's `# symptom:` names.

Each file's header cites its source URL; the log lines below `# ---` are exactly as posted.
crash-other -> crash, assertion-error -> invalid-argument; healthy-decode/startup -> no error-severity
diagnosis; other -> anything that is not an error.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spectui.core.log.pipeline import Pipeline
from spectui.core.rules.compile import load_rules
from spectui.core.rules.engine import RuleEngine
from spectui.core.rules.examples import parse_launch

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
