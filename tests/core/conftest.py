"""Helpers for tests over the real SGLang log excerpts in tests/data/corpus (header, `# ---`, then the log)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


@dataclass(frozen=True)
class CorpusFile:
    name: str
    source: str  # the URL in the header; cite it beside every real line a test uses
    lines: list[str]  # the log lines after "# ---", exactly as in the file

    def line(self, n: int) -> str:
        """The n-th log line (1-based, counting from the first line after "# ---")."""
        return self.lines[n - 1]


def load_corpus(prefix: str) -> CorpusFile:
    matches = sorted(CORPUS.glob(f"{prefix}*.log"))
    assert len(matches) == 1, f"no single corpus file for {prefix!r}: {matches}"
    text = matches[0].read_text(encoding="utf-8")
    head, sep, body = text.partition("# ---\n")
    assert sep, f"{matches[0].name} has no '# ---' line"
    source = ""
    for h in head.splitlines():
        if h.startswith("# source: "):
            source = h[len("# source: ") :].split(" ", 1)[0]
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return CorpusFile(matches[0].name, source, lines)


def corpus_names() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.log"))


@pytest.fixture
def corpus():
    """`corpus("023")` -> CorpusFile of tests/data/corpus/023-*.log."""
    return load_corpus


@pytest.fixture
def corpus_body(tmp_path: Path):
    """Write a corpus file's log part (without the `# ` header) to a temp file and return its path."""

    def write(prefix: str) -> Path:
        cf = load_corpus(prefix)
        path = tmp_path / cf.name
        path.write_text("".join(line + "\n" for line in cf.lines), encoding="utf-8")
        return path

    return write
