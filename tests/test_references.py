"""Every document the code, rules and docs cite is in the repository, and every cited § is a heading in it
(docs/REFERENCE.md, docs/SPECDEC.md, docs/DESIGN.md: the team's reference notes, kept here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITING = [p for d in ("spectui", "rules", "docs", "perf", "scripts", "tests") for p in (ROOT / d).rglob("*")
          if p.suffix in (".py", ".toml", ".md") and p.is_file()] + [ROOT / "README.md"]
CITE = re.compile(r"docs/([A-Z]+)\.md((?: ?§ ?[0-9]+(?:\.[0-9]+)?(?:[/,–-] ?§? ?[0-9]+(?:\.[0-9]+)?)*)?)")


def _headings(doc: Path) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#+ ([0-9]+(?:\.[0-9]+)?)[. ]", doc.read_text(), re.M)}


def test_cited_documents_and_sections_exist() -> None:
    missing = []
    for path in CITING:
        if path.name == "test_references.py":
            continue
        for m in CITE.finditer(path.read_text(encoding="utf-8", errors="replace")):
            doc = ROOT / "docs" / f"{m.group(1)}.md"
            if not doc.is_file():
                missing.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
                continue
            heads = _headings(doc)
            for sec in re.findall(r"§ ?([0-9]+(?:\.[0-9]+)?)", m.group(2) or ""):
                if sec not in heads:
                    missing.append(f"{path.relative_to(ROOT)}: {m.group(0)} (no § {sec})")
    assert missing == []


def test_no_citation_points_outside_the_repository() -> None:
    bare = re.compile(r"(?<![/\w.])(REFERENCE|SPECDEC) ?§|(?<![/\w])(REFERENCE|SPECDEC|DESIGN)\.md|shared/sglang/")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in CITING if p.name != "test_references.py"
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if bare.search(line)]
    assert found == []
