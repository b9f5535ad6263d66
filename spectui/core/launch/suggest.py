"""Did-you-mean for SGLang flags: other engines' names, underscores, typos, ambiguous prefixes."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# Flags users type that SGLang does not have (docs/REFERENCE.md §1.4), -> SGLang's flags, best first.
FOREIGN_FLAGS: dict[str, tuple[str, ...]] = {
    "--num-speculative-tokens": (
        "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
    ),
    "--speculative-model": ("--speculative-draft-model-path",),
    "--speculative-config": (
        "--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
        "--speculative-eagle-topk", "--speculative-num-draft-tokens",
    ),
    "--speculative-draft-tensor-parallel-size": ("--tp-size",),
    "--speculative-topk": ("--speculative-eagle-topk",),
    "--eagle-topk": ("--speculative-eagle-topk",),
    "--topk": ("--speculative-eagle-topk",),
    "--draft-model": ("--speculative-draft-model-path",),
    "--draft-model-path": ("--speculative-draft-model-path",),
    "--draft-model-dir": ("--speculative-draft-model-path",),
    "--spec-algorithm": ("--speculative-algorithm",),
    "--speculative-method": ("--speculative-algorithm",),
    "--max-draft-len": ("--speculative-num-draft-tokens",),
    "--speculative-ngram-branch-length": ("--speculative-ngram-max-trie-depth",),
    "--speculative-ngram-min-match-window-size": (),
    "--speculative-ngram-max-match-window-size": (),
    "--enable-beta-spec": (),
    "--speculative-lookahead-max-bfs-breadth": ("--speculative-ngram-max-bfs-breadth",),
    "--tensor-parallel": ("--tp-size",),
    "--gpu-memory-utilization": ("--mem-fraction-static",),
    "--max-num-seqs": ("--max-running-requests",),
    "--max-model-len": ("--context-length",),
    "--cuda-graph-max-bs": ("--cuda-graph-max-bs-decode",),
    "--cuda-graph-bs": ("--cuda-graph-bs-decode",),
}

# Extra words for the plain-words note beside a suggestion.
FOREIGN_NOTES: dict[str, str] = {
    "--num-speculative-tokens": "vLLM's name; in SGLang a chain of N draft tokens is "
    "--speculative-num-steps N --speculative-eagle-topk 1 --speculative-num-draft-tokens N+1",
    "--speculative-model": "vLLM's old name for the draft model",
    "--speculative-config": "vLLM's JSON config; SGLang takes the individual --speculative-* flags",
    "--draft-model": "TRT-LLM / llama.cpp style name for the draft model",
    "--draft-model-path": "TRT-LLM / llama.cpp style name for the draft model",
    "--enable-beta-spec": "0.5.4 only; later releases use env SGLANG_ENABLE_SPEC_V2=1 (0.5.5-0.5.10)",
    "--speculative-ngram-branch-length": "renamed in 0.5.10 without an alias",
    "--speculative-ngram-min-match-window-size": "removed in 0.5.10; no replacement",
    "--speculative-ngram-max-match-window-size": "removed in 0.5.10; no replacement",
}


def suggest_flags(flag: str, options: Sequence[str], prefix_hits: Sequence[str] = ()) -> list[str]:
    """Best guesses among `options` (a release's option strings) for an unknown or ambiguous flag."""
    name = flag.split("=", 1)[0]
    known = set(options)
    out: list[str] = []

    def add(cands: Sequence[str]) -> None:
        for c in cands:
            if c in known and c not in out:
                out.append(c)

    if len(prefix_hits) > 1:
        add(prefix_hits)
    add(FOREIGN_FLAGS.get(name, ()))
    dashed = "--" + name.lstrip("-").replace("_", "-")
    if dashed != name:
        add([dashed] if dashed in known else [o for o in options if o.startswith(dashed)][:3])
        add(FOREIGN_FLAGS.get(dashed, ()))
    if out:
        return out
    # Word-level match: "--spec-algorithm" ~ "--speculative-algorithm".
    add(difflib.get_close_matches(dashed, list(options), n=3, cutoff=0.75))
    if not out:
        words = set(dashed.strip("-").split("-"))
        scored = sorted(
            (len(words & set(o.strip("-").split("-"))), o) for o in options if o.startswith("--")
        )
        add([o for score, o in reversed(scored) if score >= 2][:3])
    return out
