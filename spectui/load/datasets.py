"""Workloads in bench_serving's names (`--dataset-name random | sharegpt | generated-shared-prefix`), made
into a PromptSet.

random    `--random-input-len I --random-output-len O --random-range-ratio R`: per request an input length
          drawn uniformly from [max(1, int(I*R)), I] and an output length from [max(1, int(O*R)), O], as
          bench_serving's compute_random_lens. spectui has no tokenizer: the input is that many words drawn
          from a vocabulary (the words of `--dataset-path` when given, else of the bundled prompts), one
          word ~ one token (exact with a word-level tokenizer; BPE splits a few). The output length becomes
          the request's max_tokens; with `--ignore-eos` the server generates exactly that many.
sharegpt  a local ShareGPT file (`--dataset-path`: a JSON list, or JSONL, of {"conversations": [{"from":
          "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}; "conversation" and role/content
          turns are read too): the first turn is the prompt, the second's length (~4 characters a token,
          no tokenizer) the output length unless `--sharegpt-output-len` fixes it; pairs whose prompt or
          output is under 2 tokens are skipped, as bench_serving does. Nothing is downloaded.
generated-shared-prefix  `--gsp-num-groups G --gsp-prompts-per-group P --gsp-system-prompt-len S
          --gsp-question-len Q --gsp-output-len O --gsp-range-ratio R` (bench_serving's defaults 64, 16, 2048,
          128, 256, 1.0): G groups of P prompts, each group one random system prompt of ~S words shared by
          its P prompts, each prompt its own ~Q-word question and O output tokens (lengths drawn from
          [N*R, N]): the prefix cache's workload. G*P prompts; the run sends `--requests` of them (default all).
          `--gsp-num-turns T` (bench_serving's multi-turn): each of the G*P becomes a conversation of T turns,
          the first "system prompt + question", the others a new ~Q-word question each, all answered with the
          conversation's O tokens; the runner sends the turns in order on the chat endpoint, each turn's
          messages the history so far (earlier answers included) plus the new question.
The draw is seeded (`--seed`): the same seed gives the same prompts and lengths.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from spectui.load.prompts import BUNDLED, DATA_DIR, Prompt, PromptFileError, PromptSet

WORD = re.compile(r"[A-Za-z]{2,12}")
CHARS_PER_TOKEN = 4
NAMES = ("random", "sharegpt", "generated-shared-prefix")


@dataclass(frozen=True)
class Dataset:
    name: str  # "random" | "sharegpt"
    num_prompts: int
    path: str | None = None
    random_input_len: int = 1024
    random_output_len: int = 1024
    random_range_ratio: float = 0.0
    sharegpt_output_len: int | None = None
    seed: int = 0
    gsp_num_groups: int = 64
    gsp_prompts_per_group: int = 16
    gsp_system_prompt_len: int = 2048
    gsp_question_len: int = 128
    gsp_output_len: int = 256
    gsp_range_ratio: float = 1.0
    gsp_num_turns: int = 1

    def validate(self) -> None:
        from spectui.load.errors import BenchConfigError

        if self.name not in NAMES:
            raise BenchConfigError(f"--dataset-name must be one of {', '.join(NAMES)}, got {self.name!r}")
        gsp = (self.gsp_num_groups, self.gsp_prompts_per_group, self.gsp_system_prompt_len, self.gsp_question_len,
               self.gsp_output_len, self.gsp_num_turns)
        if min(gsp) < 1 or not 0.0 <= self.gsp_range_ratio <= 1.0:
            raise BenchConfigError("--gsp-* lengths and counts must be at least 1, --gsp-range-ratio within [0, 1]")
        if self.name == "sharegpt" and not self.path:
            raise BenchConfigError("--dataset-name sharegpt needs --dataset-path FILE (a local ShareGPT JSON "
                                   "file: nothing is downloaded)")
        if self.random_input_len < 1 or self.random_output_len < 1:
            raise BenchConfigError("--random-input-len and --random-output-len must be at least 1")
        if not 0.0 <= self.random_range_ratio <= 1.0:
            raise BenchConfigError(f"--random-range-ratio must be within [0, 1], got {self.random_range_ratio}")
        if self.sharegpt_output_len is not None and self.sharegpt_output_len < 1:
            raise BenchConfigError("--sharegpt-output-len must be at least 1")
        if self.num_prompts < 1:
            raise BenchConfigError("the number of prompts must be at least 1")


def random_lens(full: int, ratio: float, n: int, rng: random.Random) -> list[int]:
    low = max(int(full * ratio), 1)
    return [rng.randint(low, full) for _ in range(n)]


def _vocabulary(path: str | None) -> list[str]:
    if path:
        text = _read_text(path)
    else:
        text = "\n".join((DATA_DIR / f"{name}.jsonl").read_text(encoding="utf-8") for name in BUNDLED)
    words = sorted({w.lower() for w in WORD.findall(text)})
    if len(words) < 10:
        raise PromptFileError(f"{path}: too few words to draw random prompts from", path=path or "?")
    return words


def _read_text(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PromptFileError(f"--dataset-path {path}: cannot read: {exc.strerror or exc}", path=path) from None


def random_prompts(ds: Dataset) -> PromptSet:
    rng = random.Random(ds.seed)
    vocab = _vocabulary(ds.path)
    ins = random_lens(ds.random_input_len, ds.random_range_ratio, ds.num_prompts, rng)
    outs = random_lens(ds.random_output_len, ds.random_range_ratio, ds.num_prompts, rng)
    prompts = tuple(Prompt(f"random-{i}", text=" ".join(rng.choice(vocab) for _ in range(n)), input_len=n,
                           output_len=o) for i, (n, o) in enumerate(zip(ins, outs, strict=True)))
    name = f"random:{ds.random_input_len}:{ds.random_output_len}:{ds.random_range_ratio:g}"
    return PromptSet(name, prompts, "random")


def _turns(item: object) -> list[str] | None:
    if not isinstance(item, dict):
        return None
    conv = item.get("conversations", item.get("conversation"))
    if not isinstance(conv, list):
        return None
    out = []
    for turn in conv:
        if not isinstance(turn, dict):
            return None
        value = turn.get("value", turn.get("content"))
        if not isinstance(value, str):
            return None
        out.append(value)
    return out


def _items(path: str) -> list[object]:
    text = _read_text(path)
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except ValueError:
        pass
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except ValueError:
            raise PromptFileError(f"{path}:{number}: neither a JSON list nor JSONL of ShareGPT conversations",
                                  path=path, line=number) from None
    return items


def estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN)) if text else 0


def sharegpt_prompts(ds: Dataset) -> PromptSet:
    assert ds.path is not None
    pairs = [t[:2] for t in map(_turns, _items(ds.path)) if t is not None and len(t) >= 2]
    random.Random(ds.seed).shuffle(pairs)
    prompts: list[Prompt] = []
    for i, (prompt, completion) in enumerate(pairs):
        n_in = estimate_tokens(prompt)
        n_out = ds.sharegpt_output_len if ds.sharegpt_output_len is not None else estimate_tokens(completion)
        if n_in < 2 or n_out < 2:
            continue
        prompts.append(Prompt(f"sharegpt-{i}", text=prompt, input_len=n_in, output_len=n_out))
        if len(prompts) == ds.num_prompts:
            break
    if not prompts:
        raise PromptFileError(f"{ds.path}: no ShareGPT conversation with a prompt and an answer (expected "
                              '{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]})',
                              path=ds.path)
    return PromptSet(f"sharegpt:{ds.path}", tuple(prompts), str(Path(ds.path).expanduser().resolve()))


def shared_prefix_prompts(ds: Dataset) -> PromptSet:
    rng = random.Random(ds.seed)
    vocab = _vocabulary(ds.path)
    groups, per, turns = ds.gsp_num_groups, ds.gsp_prompts_per_group, ds.gsp_num_turns
    system = random_lens(ds.gsp_system_prompt_len, ds.gsp_range_ratio, groups, rng)
    question = random_lens(ds.gsp_question_len, ds.gsp_range_ratio, groups * per * turns, rng)
    output = random_lens(ds.gsp_output_len, ds.gsp_range_ratio, groups * per, rng)
    prompts = []
    for g in range(groups):
        prefix = " ".join(rng.choice(vocab) for _ in range(system[g]))
        for j in range(per):
            i = g * per + j
            qs = [" ".join(rng.choice(vocab) for _ in range(question[i * turns + t])) for t in range(turns)]
            text, n_in = prefix + "\n\n" + qs[0], system[g] + question[i * turns]
            if turns == 1:
                prompts.append(Prompt(f"gsp-{g}-{j}", text=text, input_len=n_in, output_len=output[i]))
            else:  # bench_serving's rounds: the first a user message, each later one a new question
                prompts.append(Prompt(f"gsp-{g}-{j}", messages=({"role": "user", "content": text},), input_len=n_in,
                                      output_len=output[i], follow_ups=tuple(qs[1:])))
    name = (f"generated-shared-prefix:{groups}x{per}:{ds.gsp_system_prompt_len}+{ds.gsp_question_len}:"
            f"{ds.gsp_output_len}" + (f":{turns}turns" if turns > 1 else ""))
    return PromptSet(name, tuple(prompts), "generated-shared-prefix")


def load_dataset(ds: Dataset) -> PromptSet:
    ds.validate()
    if ds.name == "random":
        return random_prompts(ds)
    return sharegpt_prompts(ds) if ds.name == "sharegpt" else shared_prefix_prompts(ds)
