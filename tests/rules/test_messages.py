"""The SGLang message catalogue (#27 point 4): the builder (spectui/data/dump_messages.py, ast over wheels),
the bundled catalogue (spectui/data/messages/), rules referencing its entries, and `rules test` checking
every reference still exists in some release.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from spectui.core.log import texts as logtexts
from spectui.core.rules import load_file, load_rules
from spectui.core.rules import messages as rule_messages
from spectui.core.versions import version_tuple
from spectui.data import dump_messages

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "spectui" / "data" / "messages" / rule_messages.CATALOGUE_FILE
RULES, _ = load_rules()

SOURCE = '''
import logging, warnings
logger = logging.getLogger(__name__)

class ModelRunner:
    def init_memory_pool(self, total):
        if total <= 0:
            raise RuntimeError(
                "Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: {self.server_args.mem_fraction_static=}"
            )
        assert self.page_size > 0, f"page_size must be positive, got {self.page_size}"
        logger.warning("KV pool holds %d tokens, fewer than --context-length %d.", total, 5)
        logger.error("Bad {} and {name} ({{braces}})".format(1, name=2))
        warnings.warn("Speculative decoding is experimental here")
        raise ValueError("short")
        raise KeyError(name)
        msg = "Not enough GPU memory for the draft pool."
        msg += f" Current value: {total}"
        raise RuntimeError(msg)


def top():
    logger.info("an info line is not a warning or an error")
'''


def test_builder_reads_raise_assert_and_logger_texts_with_placeholders() -> None:
    found = {(kind, level, text, func) for kind, level, text, func, _ in dump_messages.scan_source(SOURCE)}
    assert found == {
        ("raise", "RuntimeError", "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
         "self.server_args.mem_fraction_static={}", "ModelRunner.init_memory_pool"),  # f"{x=}" prints its name
        ("assert", "AssertionError", "page_size must be positive, got {}", "ModelRunner.init_memory_pool"),
        ("log", "warning", "KV pool holds {} tokens, fewer than --context-length {}.", "ModelRunner.init_memory_pool"),
        ("log", "error", "Bad {} and {} ({{braces}})", "ModelRunner.init_memory_pool"),
        ("log", "warning", "Speculative decoding is experimental here", "ModelRunner.init_memory_pool"),
        ("raise", "RuntimeError", "Not enough GPU memory for the draft pool. Current value: {}",
         "ModelRunner.init_memory_pool"),
    }  # "short" (too little literal text), KeyError(name) (no text) and logger.info are left out


def test_a_catalogue_text_as_a_pattern_matches_what_sglang_printed() -> None:
    pattern = rule_messages.text_pattern("KV pool holds {} tokens, fewer than --context-length {}.")
    assert re.search(pattern, "[ts TP0] KV pool holds 12288 tokens, fewer than --context-length 131072. One")
    assert re.search(rule_messages.text_pattern("Bad {} and {} ({{braces}})"), "Bad 1 and 2 ({braces})")
    assert not re.search(pattern, "KV pool holds tokens")


def _wheel(tmp_path: Path, version: str, files: dict[str, str]) -> Path:
    path = tmp_path / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_builder_merges_releases_into_ranges(tmp_path: Path) -> None:
    old = 'def f():\n    raise RuntimeError("Capture cuda graph failed: {}".format(e))\n'
    new = 'def f():\n    raise RuntimeError(f"Capture cuda graph failed: {e}")\n    assert x, "draft vocab mismatch in eagle"\n'
    wheels = [_wheel(tmp_path, "0.5.10", {"sglang/srt/model_executor/cuda_graph_runner.py": new}),
              _wheel(tmp_path, "0.4.6", {"sglang/srt/model_executor/cuda_graph_runner.py": old,
                                         "sglang/lang/other.py": 'raise ValueError("not under srt at all")'}),
              _wheel(tmp_path, "0.5.2", {"sglang/srt/speculative/eagle_worker.py": new})]
    out = tmp_path / "cat.json.gz"
    assert dump_messages.main([str(p) for p in wheels] + ["-o", str(out)]) == 0
    cat = rule_messages.parse_catalogue(json.loads(gzip.decompress(out.read_bytes())))
    assert cat.releases == ("0.4.6", "0.5.2", "0.5.10")
    (capture,) = cat.resolve("Capture cuda graph failed")
    assert capture.releases == ("0.4.6", "0.5.2", "0.5.10") and capture.release_range == "0.4.6..0.5.10"
    assert capture.module == "sglang/srt/model_executor/cuda_graph_runner.py"  # the latest release's place
    assert capture.subsystem == "cuda_graph"
    (draft,) = cat.resolve("draft vocab mismatch")
    assert draft.releases == ("0.5.2", "0.5.10") and draft.spec == "spec"  # its text says "draft"
    assert cat.resolve(capture.id) == [capture]
    assert cat.resolve("not under srt") == []


def test_builder_cli_refuses_a_missing_input_with_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "spectui/data/dump_messages.py"), str(tmp_path / "nope.whl")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "no such file" in out.stderr


def test_bundled_catalogue_spans_the_releases_and_stays_small() -> None:
    cat = rule_messages.load_catalogue()
    assert cat is not None
    assert len(cat.releases) >= 6
    assert cat.releases[0] == "0.4.6" and cat.releases[-1] == "0.5.23"
    assert BUNDLED.stat().st_size < 450_000
    kinds = {m.kind for m in cat.messages}
    assert kinds == {"raise", "assert", "log"}
    spec = [m for m in cat.messages if m.module.startswith("sglang/srt/speculative/")]
    assert spec and all(m.spec for m in spec) and all(m.subsystem == "draft_worker" for m in spec)


@pytest.mark.parametrize(("fragment", "level", "module_part"), [
    ("Not enough memory. Please try to increase --mem-fraction-static.", "RuntimeError", "sglang/srt/"),
    ("Capture cuda graph failed: ", "Exception", "graph_runner"),
    ("Loaded weights leave no GPU memory for the KV cache", "ValueError", "sglang/srt/mem_cache/"),
])
def test_bundled_catalogue_knows_sglangs_memory_and_graph_texts(fragment: str, level: str, module_part: str) -> None:
    hits = rule_messages.load_catalogue().resolve(fragment)
    assert any(m.level == level and module_part in m.module for m in hits), [(m.level, m.module) for m in hits]


# texts.py ranges the wheels contradict: the catalogue finds the text in an earlier sampled release than
# texts.py's first one (the true first release lies between that sample and the one before it). Version
# guesses lean on these bounds: fixing them is for the owner of the guesses (reported with #27).
EARLIER_THAN_TEXTS_SAYS = {
    "Non-overlap (synchronous) spec v2 is used for eagle/eagle3/standalone speculative decoding.": "0.5.14",
    "Mixed chunked prefill is disabled because of using eagle speculative decoding.": "0.4.8",
    "DeepSeek MTP does not require setting speculative_draft_model_path.": "0.4.8",
    "The mixed chunked prefill are disabled because of using ngram": "0.5.14",
    "DSpark only supports ": "0.5.16",
    "DSpark gamma is not set; defaulting to ": "0.5.16",
    "Setting max_running_requests to ": "0.5.12",
}


def test_resolution_warnings_the_parser_knows_are_sglang_texts_in_their_release_range() -> None:
    # texts.py's hand-kept list against the catalogue: each text is printed by some release, and (but for
    # the documented cases above) only by releases inside the range texts.py gives it.
    cat = rule_messages.load_catalogue()
    logged = [m for m in cat.messages if m.kind == "log"]
    missing, earlier, later = [], {}, []
    for text, lo, hi in logtexts.RESOLUTION_WARNINGS:
        hits = [m for m in logged if m.plain().startswith(text)]
        hits = hits or [m for m in logged if re.match(rule_messages.text_pattern(m.text), text)]
        if not hits:
            missing.append(text)
            continue
        releases = sorted({r for m in hits for r in m.releases}, key=version_tuple)
        if lo is not None and version_tuple(releases[0]) < lo:
            earlier[text] = releases[0]
        if hi is not None and version_tuple(releases[-1]) > hi:
            later.append((text, releases[-1]))
    assert len(missing) <= 2, missing  # all but texts printed from a variable SGLang builds elsewhere
    assert later == []
    assert earlier == EARLIER_THAN_TEXTS_SAYS


def test_rules_reference_catalogue_entries_and_every_reference_resolves() -> None:
    refs = [(r.id, ref) for r in RULES for c in r.log_clauses if c.catalogue is not None for ref in c.catalogue.refs]
    assert len({rid for rid, _ in refs}) >= 3, refs
    cat = rule_messages.load_catalogue()
    assert all(cat.resolve(ref) for _, ref in refs)


def test_a_rule_whose_text_sglang_no_longer_prints_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "XX001.toml"
    path.write_text('id = "XX001"\ntitle = "t t"\ncategory = "crash"\nseverity = "error"\ndiagnosis = "d"\n'
                    'explanation = "e"\n[[match]]\nkind = "log"\nrecord = "error"\n'
                    'catalogue = ["This text was never printed by any SGLang"]\n')
    rule, error = load_file(path, "XX001.toml")
    assert rule is None
    assert "field 'match.0.catalogue'" in error and "matches no message of any SGLang release" in error


def test_rules_test_reports_the_catalogue_check() -> None:
    out = subprocess.run([sys.executable, "-m", "spectui", "rules", "test", "--json"], capture_output=True,
                         text=True, timeout=120)
    data = json.loads(out.stdout)
    assert data["ok"], data["failed"][:3]
    assert data["catalogue"]["references"] >= 3 and data["catalogue"]["releases"] >= 6


def test_a_diagnosis_names_the_sglang_message_and_its_releases() -> None:
    from spectui.core.log import Pipeline
    from spectui.core.rules import RuleEngine

    engine = RuleEngine(RULES)
    pipe = Pipeline(engine=engine)
    pipe.feed_lines(["[2025-12-03 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
                     '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1400, in init_memory_pool',
                     "    raise RuntimeError(",
                     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
                     "self.server_args.mem_fraction_static=0.7"])
    pipe.finish()
    top = engine.diagnoses[0]
    assert top.rule == "MEM001"
    (line,) = [e for e in top.evidence if e.startswith("SGLang's own message: ")]
    assert re.search(r"sglang/srt/\S+\.py:\S+, printed by 0\.4\.6\.\.0\.5\.\d+", line), line
