"""The depth advice under load compares like with like: per-request decode speed at the running batch
(spectui.core.specdec.advise with running=batch), never the throughput summed over 48 running requests
against a single-stream baseline (which made every drafted token look free and the advice say "deeper")."""

from __future__ import annotations

import re
from pathlib import Path

from spectui.core.log import Pipeline
from spectui.core.rules import BaselineTps, DecodeWindow, baseline_ratio, spec_math
from spectui.core.specdec import depth_advice, theory
from spectui.sources.follow import make_engine

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
DEEP = ("python -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3 --speculative-draft-model-path /d "
        "--speculative-eagle-topk 1 --speculative-num-steps {k} --speculative-num-draft-tokens {n}")


def corpus_decode_lines(name: str) -> list[str]:
    text = (CORPUS / name).read_text(encoding="utf-8").split("# ---\n", 1)[1]
    return [ln for ln in text.splitlines() if "Decode batch" in ln]


def run(lines: list[str], steps: int, baseline: float | None = None):
    engine = make_engine(DEEP.format(k=steps, n=steps + 1).split(), "0.5.6", baseline_tps=baseline)
    pipe = Pipeline(engine=engine)
    pipe.feed_lines(lines)
    pipe.finish()
    return {d.rule: d for d in engine.diagnoses}


def loaded_lines(accept: float, tps: float, running: int = 48, n: int = 8) -> list[str]:
    """Decode lines in corpus 036's exact format (python logging prefix, old 'Decode batch.' wording),
    with the accept length and throughput of a deep chain under load."""
    tpl = corpus_decode_lines("036-adaptive-spec-disabled-accept-len-1-pylogging.log")[0]
    out = []
    for i in range(n):
        ln = re.sub(r"#running-req: \d+", f"#running-req: {running}", tpl)
        ln = re.sub(r"accept len: [\d.]+", f"accept len: {accept + 0.01 * (i % 3):.2f}", ln)
        out.append(re.sub(r"gen throughput \(token/s\): [\d.]+", f"gen throughput (token/s): {tps + i:.2f}", ln))
    return out


def test_deep_chain_under_load_is_never_told_to_go_deeper() -> None:
    # 8 steps, accept len 2.2 (15 % of the drafts kept) at 48 running requests, 2500 tok/s summed; the
    # operator's baseline is single-stream (100 tok/s at 1 request). The old spec_math took 2500 / 100 = 25x
    # as the speedup, solved the draft cost to 0 and advised the deepest chain it scanned.
    lines = loaded_lines(2.2, 2500.0)
    old_alpha = theory.alpha_from_accept_len(2.2, 8)
    old_cost = theory.implied_draft_cost(2.2, 8, 2500.0 / 100.0)
    assert old_cost == 0.0 and theory.best_depth(old_alpha, old_cost).steps > 8  # the bug, reproduced
    diags = run(lines, 8, BaselineTps(100.0, running=1))
    spec025 = diags["SPEC025"]
    said = [int(x) for x in re.findall(r"(\d+) steps", spec025.message)]
    assert said and all(k < 8 for k in said), spec025.message
    assert "48 running requests" in spec025.message
    # no "slower/faster than baseline" claim from a single-stream baseline against a loaded server
    assert "SPEC026" not in diags
    fix = dict(spec025.fix.set) if spec025.fix else {}
    assert int(fix.get("--speculative-num-steps", "1")) < 8
    # the same answer as the advisor itself at that batch (what spectui advise / SPEC031 use)
    verdict = depth_advice(8, 2.2, 2500.0 / 48, None, running=48)
    assert verdict.direction in ("shallower", "off")
    assert verdict.steps < 8


def test_real_corpus_lines_at_48_running_get_no_depth_that_pays() -> None:
    # corpus 036 verbatim: 48 running, accept len 1.00 (SGLang's adaptive threshold turned drafting off).
    lines = corpus_decode_lines("036-adaptive-spec-disabled-accept-len-1-pylogging.log")
    diags = run(lines * 2, 3)
    msg = diags["SPEC025"].message
    assert "48 running requests" in msg and "no depth is predicted to beat no speculation" in msg, msg
    assert "would pay best" not in msg


def test_a_baseline_at_the_same_concurrency_is_compared() -> None:
    # bench measures both sides at the same concurrency: 2500 tok/s against 3000 without speculation
    agg = {"accept_len": 2.2, "gen_tokens_per_s": 2500.0, "running_req": 48.0}
    out = spec_math(agg, 8, 9, BaselineTps(3000.0, running=48))
    assert abs(out["speedup_observed"] - 2500 / 3000) < 1e-9
    assert out["best_steps"] < 8 and "implied_cost" in out
    diags = run(loaded_lines(2.2, 2500.0), 8, 3000.0)  # given, concurrency unknown: taken as the same
    assert "SPEC026" in diags and "0.83x" in diags["SPEC026"].message
    # a single-stream baseline is no comparison for 48 running requests
    assert baseline_ratio(2500.0, 48.0, BaselineTps(100.0, running=1)) is None
    assert baseline_ratio(2500.0, 48.0, 3000.0) is not None


def test_in_log_baseline_remembers_its_concurrency() -> None:
    w = DecodeWindow()
    from spectui.core.log import DecodeSample, LogParser

    lines = [f"[2025-12-03 09:01:0{i} TP0] Decode batch, #running-req: 1, #token: 100, token usage: 0.01, "
             f"cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0, " for i in range(3)]
    for rec in LogParser().feed(lines):
        if isinstance(rec, DecodeSample):
            w.add(rec)
    base = w.mean_tps()
    assert base == 100.0 and base.running == 1
