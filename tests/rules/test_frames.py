"""Tracebacks judged by their frames (#27 point 2): rules/_frames.toml maps SGLang's modules and functions to
subsystems; rules fire on "died inside X" with the innermost SGLang frame as evidence, exception line or not.

Frame paths and function names are SGLang's own (0.4.6-0.5.23 wheels: model_executor/cuda_graph_runner.py,
distributed/parallel_state.py, speculative/eagle_worker.py, disaggregation/mooncake/conn.py, ...).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.log import LogParser, Pipeline, records
from spectui.core.rules import RuleEngine, load_file, load_rules
from spectui.core.rules import frames as rule_frames

RULES, _ = load_rules()
SITE = "/usr/local/lib/python3.10/dist-packages"
HEAD = "[2025-12-03 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"


def frame(path: str, func: str, source: str = "", lineno: int = 100) -> list[str]:
    lines = [f'  File "{SITE}/{path}", line {lineno}, in {func}']
    return lines + ([f"    {source}"] if source else [])


SCHED = frame("sglang/srt/managers/scheduler.py", "run_scheduler_process", "scheduler = Scheduler(")
# (subsystem, frames (outermost first) of a traceback cut before its exception line, category expected)
CASES = {
    "dist_init": (SCHED + frame("sglang/srt/model_executor/model_runner.py", "init_torch_distributed",
                                "initialize_model_parallel(")
                  + frame("sglang/srt/distributed/parallel_state.py", "initialize_model_parallel",
                          "_TP = init_model_parallel_group(")
                  + frame("torch/distributed/distributed_c10d.py", "new_group", "return _new_group_with_tag("),
                  "nccl"),
    "cuda_graph": (SCHED + frame("sglang/srt/model_executor/cuda_graph_runner.py", "capture",
                                 "graph, output_buffers = self.capture_one_batch_size(bs, forward)")
                   + frame("sglang/srt/layers/attention/flashinfer_backend.py", "forward_decode",
                           "o = decode_wrapper.forward("),
                   "cuda-graph"),
    "weight_loading": (SCHED + frame("sglang/srt/model_loader/loader.py", "_prepare_weights",
                                     "hf_folder = download_weights_from_hf(")
                       + frame("sglang/srt/model_loader/weight_utils.py", "download_weights_from_hf",
                               "hf_folder = snapshot_download("),
                       "weight-load"),
    "draft_worker": (SCHED + frame("sglang/srt/speculative/eagle_worker.py", "forward_draft_extend",
                                   "logits_output = self.draft_model_runner.forward(forward_batch)")
                     + frame("sglang/srt/layers/logits_processor.py", "forward", "hidden_states = hidden_states["),
                     "crash"),
    "pd_transfer": (SCHED + frame("sglang/srt/disaggregation/prefill.py", "process_disagg_prefill_inflight_queue",
                                  "poll = self.kv_sender.poll()")
                    + frame("sglang/srt/disaggregation/mooncake/conn.py", "send_aux", "status = self.engine.transfer_sync("),
                    "crash"),
    "torch_compile": (SCHED + frame("sglang/srt/model_executor/cuda_graph_runner.py", "capture",
                                    "graph, output_buffers = self.capture_one_batch_size(bs, forward)")
                      + frame("torch/_dynamo/eval_frame.py", "_fn", "return fn(*args, **kwargs)"),
                      "cuda-graph"),
}


@pytest.mark.parametrize("subsystem", sorted(CASES))
def test_cut_traceback_is_judged_by_its_innermost_mapped_frame(subsystem: str) -> None:
    lines, category = CASES[subsystem][0], CASES[subsystem][1]
    parser = LogParser()
    (event,) = [r for r in parser.feed([HEAD, *lines]) + parser.finish() if getattr(r, "frames", None)]
    assert event.exc_type == "Traceback"  # no exception line
    died = rule_frames.died_in(event.frames)
    assert died is not None and died.subsystem == subsystem
    engine = RuleEngine(RULES)
    pipe = Pipeline(engine=engine)
    pipe.feed_lines([HEAD, *lines])
    pipe.finish()
    top = engine.diagnoses[0]
    assert top.category == category, [(d.rule, d.category) for d in engine.diagnoses]
    shown = top.message + " ".join(top.evidence)
    assert f"({died.sglang_file}:{died.sglang_line})" in shown, shown  # the innermost SGLang frame as evidence


def test_frames_walked_from_the_innermost_outwards_past_unmapped_ones() -> None:
    frames = (records.Frame(f"{SITE}/sglang/srt/managers/scheduler.py", 1, "event_loop_normal"),
              records.Frame(f"{SITE}/sglang/srt/model_executor/cuda_graph_runner.py", 2, "replay"),
              records.Frame(f"{SITE}/sglang/srt/layers/attention/triton_backend.py", 3, "forward_decode"),
              records.Frame(f"{SITE}/torch/nn/modules/module.py", 4, "_call_impl"))
    died = rule_frames.died_in(frames)
    assert died is not None
    assert (died.subsystem, died.through) == ("cuda_graph", ("cuda_graph",))
    # the evidence is the innermost SGLang frame, not the deciding one nor torch's
    assert (died.sglang_func, died.sglang_file, died.sglang_line) == (
        "forward_decode", "sglang/srt/layers/attention/triton_backend.py", 3)


def test_a_frame_cut_at_a_call_is_judged_by_its_source_line() -> None:
    # Scheduler.__init__ cut at `self.draft_worker = EAGLEWorker(` (sglang #9074): the draft worker.
    frames = (records.Frame(f"{SITE}/sglang/srt/managers/scheduler.py", 327, "__init__", "self.draft_worker = EAGLEWorker("),)
    assert rule_frames.died_in(frames).subsystem == "draft_worker"
    frames = (records.Frame(f"{SITE}/sglang/srt/managers/scheduler.py", 327, "__init__", "self.tp_worker = TpModelWorker("),)
    assert rule_frames.died_in(frames).subsystem is None


def test_inner_subsystem_first_and_every_one_in_through() -> None:
    frames = (records.Frame(f"{SITE}/sglang/srt/model_executor/cuda_graph_runner.py", 1, "capture"),
              records.Frame(f"{SITE}/sglang/srt/distributed/parallel_state.py", 2, "all_reduce"),
              records.Frame(f"{SITE}/torch/distributed/distributed_c10d.py", 3, "all_reduce"))
    died = rule_frames.died_in(frames)
    assert died.subsystem == "collective" and died.through == ("collective", "cuda_graph")


def test_the_built_in_map_loads_and_every_rule_names_known_subsystems() -> None:
    ids = {s.id for s in rule_frames.frame_map()}
    assert {"dist_init", "collective", "cuda_graph", "weight_loading", "draft_worker", "pd_transfer",
            "torch_compile", "memory_pool"} <= ids
    used = {name for rule in RULES for c in rule.log_clauses
            for names in (c.subsystems, c.through, c.outside) if names for name in names}
    assert used and used <= ids


@pytest.mark.parametrize(("text", "error"), [
    ('[[subsystem]]\nid = "x"\nname = "X"\nfile = "("\n', "bad regex"),
    ('[[subsystem]]\nid = "x"\nname = "X"\n', "field 'file'"),
    ('[[subsystem]]\nid = "Bad-Id"\nname = "X"\nfile = "a"\n', "lower_snake_case"),
    ('[[subsystem]]\nid = "x"\nname = "X"\nfile = "a"\nfunction = "f"\n', "unknown field 'function'"),
    ('[other]\n', "unknown key 'other'"),
])
def test_a_bad_frame_map_is_one_clear_error(text: str, error: str) -> None:
    with pytest.raises(rule_frames.FrameMapError, match=error):
        rule_frames.parse_frame_map(text, "_frames.toml")


def test_a_rule_naming_an_unknown_subsystem_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "X001.toml"
    path.write_text('id = "XX001"\ntitle = "t t"\ncategory = "crash"\nseverity = "error"\ndiagnosis = "d"\n'
                    'explanation = "e"\n[[match]]\nkind = "log"\nrecord = "error"\nsubsystem = ["cuda_graphs"]\n')
    rule, error = load_file(path, "X001.toml")
    assert rule is None
    assert "field 'match.0.subsystem'" in error and "unknown subsystem 'cuda_graphs'" in error


def test_the_frame_map_is_not_loaded_as_a_rule() -> None:
    assert all(not Path(r.path).name.startswith("_") for r in RULES)
