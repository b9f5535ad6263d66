"""Advice that is concrete and never contradicts the log's own evidence (#27 point 3).

- Every error rule offers a flag patch ([[fix]]) or names a concrete action in each diagnosis text (a flag,
  an environment variable, a `spectui` command); the few whose remedy is SGLang's own message, or the
  first error before them, are listed with the reason.
- Memory: where the weights leave no room for the KV cache, no fix lowers --mem-fraction-static; an OOM
  while the weights load does not get "lower --mem-fraction-static" either.
- gloo "connection closed" during graph capture is a dead peer / network interface, not "disable CUDA graphs".
- torch.compile frames lead to dropping --enable-torch-compile; a device-side index assert in the draft to
  the draft's vocabulary/config and `spectui inspect`.

Log texts are SGLang's own (0.4.6-0.5.23 wheels) and torch's.
"""

from __future__ import annotations

import re

import pytest

from spectui.core.log import Pipeline
from spectui.core.rules import RuleEngine, load_rules, parse_launch

RULES, _ = load_rules()
ACTION = re.compile(r"--[a-z][a-z0-9-]+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|`spectui [a-z]")
# Error rules whose diagnosis is not a remedy of its own, and why.
NO_OWN_REMEDY = {
    "ARG001": "argparse refused flags: the remedy is the flag names it quotes",
    "ARG007": "argparse usage block: the remedy is argparse's own error line",
    "ARG008": "argparse error: ditto",
    "SPEC014": "SGLang's own refusal text names what to change",
    "SPEC019": "SGLang's own resolution error names what to change",
    "CRASH001": "the catch-all crash: points at the first traceback",
    "CRASH002": "a consequence (SIGQUIT/exit code): points at the first error before it",
    "CRASH007": "warm-up failed: the traceback after it has the cause",
    "CRASH004": "native abort: no flag is implied by the abort itself",
    "HID002": "an architecture without EAGLE-3 support: upgrade or another algorithm",
}


def diagnose(lines: list[str], launch: str | None = None):
    engine = RuleEngine(RULES, launch=parse_launch(launch) if launch else None)
    pipe = Pipeline(engine=engine)
    pipe.feed_lines(lines)
    pipe.finish()
    return engine.diagnoses


@pytest.mark.parametrize("rule", [r for r in RULES if r.severity == "error"], ids=lambda r: r.id)
def test_every_error_rule_has_a_concrete_fix(rule) -> None:
    if rule.fixes or rule.id in NO_OWN_REMEDY:
        return
    vague = [t.source[:90] for t in rule.diagnosis if not ACTION.search(t.source)]
    assert not vague, f"{rule.id}: a diagnosis without a flag, env var or spectui command: {vague}"


def test_the_no_remedy_list_names_only_real_rules_without_fixes() -> None:
    by_id = {r.id: r for r in RULES}
    assert set(NO_OWN_REMEDY) <= set(by_id)
    assert [i for i in NO_OWN_REMEDY if by_id[i].fixes] == []


def mfs_moves(diagnoses, current: float) -> list[tuple[str, float]]:
    out = []
    for d in diagnoses:
        if d.fix is not None and "--mem-fraction-static" in d.fix.set:
            out.append((d.rule, float(d.fix.set["--mem-fraction-static"]) - current))
    return out


HEAD = "[2026-11-30 09:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"
LAUNCH = "--model-path m --mem-fraction-static 0.8 --tp-size 1"
NO_ROOM = {
    "not-enough-memory": [HEAD,
                          '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1400, in init_memory_pool',
                          "    raise RuntimeError(",
                          "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                          "Current value: mem_fraction_static=0.8"],
    "weights-leave-no-kv-0.5.23": [
        HEAD, '  File "/sgl/python/sglang/srt/mem_cache/kv_cache_configurator.py", line 3050, in _profile_max_num_token',
        "    raise ValueError(",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. Raise "
        "--mem-fraction-static above 0.873 (minimum viable = 1 - available/pre = 0.8721)."],
    "negative-budget-rocm": [
        "[2025-06-02 11:20:01 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=3.01 GB",
        "[2025-06-02 11:20:02 TP0] KV Cache is allocated. #tokens: -52096, K size: -1.59 GB, V size: -1.59 GB",
        # later symptoms of the same budget must not flip the advice
        "[2025-06-02 11:20:09 TP0] Decode out of memory. Try to lower your batch size."],
    "negative-dimension": [
        HEAD, '  File "/sgl/python/sglang/srt/mem_cache/memory_pool.py", line 301, in _create_buffers',
        "    torch.zeros((self.size + self.page_size, self.head_num, self.head_dim))",
        "RuntimeError: Trying to create tensor with negative dimension -52031: [-52031, 8, 128]"],
    "kv-smaller-than-context": [
        "[2026-11-30 09:00:00 TP0] KV pool holds 12288 tokens, fewer than --context-length 131072. One full-length "
        "request cannot fit, so long requests will be refused or truncated at serving time."],
}


@pytest.mark.parametrize("case", sorted(NO_ROOM))
def test_no_room_for_the_kv_cache_means_more_mem_fraction_never_less(case: str) -> None:
    diagnoses = diagnose(NO_ROOM[case], LAUNCH)
    assert diagnoses, case
    assert diagnoses[0].category in ("oom", "capacity")
    moves = mfs_moves(diagnoses, 0.8)
    assert moves and all(delta > 0 for _, delta in moves), moves
    assert "lower --mem-fraction-static" not in diagnoses[0].message.lower()


def test_oom_while_the_weights_load_does_not_blame_the_static_fraction() -> None:
    lines = [HEAD,
             '  File "/sgl/python/sglang/srt/model_loader/loader.py", line 380, in load_model',
             "    model = _initialize_model(model_config, self.load_config)",
             "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of "
             "191.98 GiB of which 1.02 GiB is free."]
    diagnoses = diagnose(lines, LAUNCH)
    assert diagnoses[0].rule == "MEM008"
    assert mfs_moves(diagnoses, 0.8) == []
    assert diagnoses[0].fix is not None and diagnoses[0].fix.set == {"--tp-size": "2"}


def test_runtime_oom_still_lowers_the_fraction() -> None:
    diagnoses = diagnose(["[2025-12-03 10:00:00 TP0] Decode out of memory. Try to lower your batch size."], LAUNCH)
    assert [d for _, d in mfs_moves(diagnoses, 0.8)] and all(d < 0 for _, d in mfs_moves(diagnoses, 0.8))


GLOO_IN_CAPTURE = [
    "[2025-07-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.10 GB",
    "[2025-07-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 380, in capture',
    "    with graph_capture() as graph_capture_context:",
    '  File "/sgl/python/sglang/srt/distributed/parallel_state.py", line 1445, in graph_capture',
    "    get_tp_group().barrier()",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:24281",
]


def test_gloo_connection_closed_in_capture_is_a_peer_or_interface_not_cuda_graphs() -> None:
    diagnoses = diagnose(GLOO_IN_CAPTURE, LAUNCH)
    top = diagnoses[0]
    assert (top.rule, top.category) == ("NET005", "nccl")
    assert "GLOO_SOCKET_IFNAME" in top.message and "NCCL_SOCKET_IFNAME" in top.message
    assert not any(d.fix and "--disable-cuda-graph" in d.fix.set for d in diagnoses)
    assert not any("start with --disable-cuda-graph" in d.message for d in diagnoses)


def test_torch_compile_frames_lead_to_removing_enable_torch_compile() -> None:
    lines = [HEAD,
             '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 380, in capture',
             "    out = self.capture_one_batch_size(bs, forward)",
             '  File "/usr/lib/python3.12/site-packages/torch/_inductor/compile_fx.py", line 1500, in compile_fx',
             "    return inner_compile(gm, example_inputs)"]  # cut before the exception line
    diagnoses = diagnose(lines, LAUNCH + " --enable-torch-compile")
    top = diagnoses[0]
    assert top.category == "cuda-graph" and "--enable-torch-compile" in top.message
    fixes = [d.fix for d in diagnoses if d.fix is not None]
    assert fixes and all("--enable-torch-compile" in f.unset for f in fixes)
    assert not any("--disable-cuda-graph" in f.set for f in fixes)


def test_device_side_index_assert_in_the_draft_points_at_its_vocabulary_and_inspect() -> None:
    lines = ["[2025-12-03 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/sgl/python/sglang/srt/speculative/eagle_worker.py", line 600, in draft_forward',
             "    spec_info.hidden_states = logits_output.hidden_states",
             "RuntimeError: CUDA error: device-side assert triggered"]
    top = diagnose(lines)[0]
    assert top.rule == "CRASH003"
    assert "vocabulary" in top.message and "spectui inspect" in top.message


def test_device_side_assert_without_speculation_keeps_the_generic_advice() -> None:
    top = diagnose(["RuntimeError: CUDA error: device-side assert triggered"])[0]
    assert top.rule == "CRASH003" and "spectui inspect" not in top.message
