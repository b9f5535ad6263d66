"""Prompt sets for `spectui bench`: the bundled ones (spectui/data/prompts/*.jsonl) and a user's JSONL file.

One JSON object per line, either `{"prompt": "..."}` (a plain prompt, sent to /v1/completions) or
`{"messages": [{"role": ..., "content": ...}, ...]}` (sent to /v1/chat/completions). An optional `"id"`
names the prompt. Blank lines are skipped; anything else that is not such an object is an error that
names the file and the line (PromptFileError, a UsageError: the CLI exits 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from spectui.errors import InputError

BUNDLED = ("chat", "code", "math", "summarise")
MIXED = "mixed"
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "prompts"
ROLES = ("system", "user", "assistant", "developer", "tool")


class PromptFileError(InputError):
    """A prompts file that cannot be used; `path` and `line` (1-based, None: the whole file) say where."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt. Exactly one of `text` (plain) and `messages` (chat) is set."""

    id: str
    text: str | None = None
    messages: tuple[dict[str, str], ...] | None = None
    input_len: int | None = None  # the workload's input length in tokens (random, ShareGPT), if it has one
    output_len: int | None = None  # its max_tokens for this prompt (random, ShareGPT), else the run's
    follow_ups: tuple[str, ...] = ()  # a multi-turn conversation's later user turns (sent in order, each
    #                                   after the answer to the one before it; spectui.load.runner)

    @property
    def turns(self) -> int:
        return 1 + len(self.follow_ups)

    @property
    def is_chat(self) -> bool:
        return self.messages is not None

    def as_messages(self) -> list[dict[str, str]]:
        """Chat messages for this prompt (a plain prompt becomes one user message)."""
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": "user", "content": self.text or ""}]

    @property
    def chars(self) -> int:
        if self.messages is not None:
            return sum(len(m["content"]) for m in self.messages)
        return len(self.text or "")


@dataclass(frozen=True, slots=True)
class PromptSet:
    name: str  # "mixed", "code", or the file path as given
    prompts: tuple[Prompt, ...]
    source: str  # "bundled" or the resolved file path

    def __len__(self) -> int:
        return len(self.prompts)

    @property
    def turns(self) -> int:
        """Turns of its longest conversation (1: single requests)."""
        return max((p.turns for p in self.prompts), default=1)


def load_prompts(spec: str = MIXED) -> PromptSet:
    """A bundled set by name (`chat`, `code`, `math`, `summarise`, `mixed` = all of them), else a JSONL
    file path. Raises PromptFileError (exit 2) for a missing, unreadable, empty or malformed file."""
    if spec in BUNDLED:
        return PromptSet(spec, _read(DATA_DIR / f"{spec}.jsonl", shown=f"{spec}.jsonl"), "bundled")
    if spec == MIXED:
        prompts: list[Prompt] = []
        for name in BUNDLED:
            prompts.extend(_read(DATA_DIR / f"{name}.jsonl", shown=f"{name}.jsonl"))
        return PromptSet(MIXED, tuple(prompts), "bundled")
    path = Path(spec).expanduser()
    if not path.exists():
        names = ", ".join((*BUNDLED, MIXED))
        raise PromptFileError(f"--prompts {spec}: no such file, and not a bundled set ({names})", path=spec)
    return PromptSet(spec, _read(path, shown=spec), str(path.resolve()))


def parse_prompts(text: str, *, path: str = "<string>") -> tuple[Prompt, ...]:
    """Parse JSONL text (see the module docstring); errors name `path` and the line number."""
    prompts: list[Prompt] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        prompt = _parse_line(line, path, number, default_id=f"{Path(path).stem}-{number}")
        if prompt.id in seen:
            raise PromptFileError(f"{path}:{number}: duplicate id {prompt.id!r}", path=path, line=number)
        seen.add(prompt.id)
        prompts.append(prompt)
    if not prompts:
        raise PromptFileError(f"{path}: no prompts (expected one JSON object per line, "
                              '{"prompt": "..."} or {"messages": [...]})', path=path)
    return tuple(prompts)


def _read(path: Path, *, shown: str) -> tuple[Prompt, ...]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PromptFileError(f"{shown}: cannot read: {exc.strerror or exc}", path=shown) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PromptFileError(f"{shown}:{line}: not UTF-8 text", path=shown, line=line) from None
    return parse_prompts(text.removeprefix("\ufeff"), path=shown)


def _parse_line(line: str, path: str, number: int, *, default_id: str) -> Prompt:
    where = f"{path}:{number}"

    def fail(why: str) -> PromptFileError:
        return PromptFileError(f"{where}: {why}", path=path, line=number)

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise fail(f'expected a JSON object with "prompt" or "messages", got {type(obj).__name__}')
    has_prompt, has_messages = "prompt" in obj, "messages" in obj
    if has_prompt == has_messages:
        raise fail('expected exactly one of "prompt" and "messages"' if has_prompt
                   else 'no "prompt" or "messages" key')
    pid = obj.get("id", default_id)
    if not isinstance(pid, str | int) or isinstance(pid, bool) or str(pid) == "":
        raise fail('"id" must be a non-empty string or an integer')
    if has_prompt:
        text = obj["prompt"]
        if not isinstance(text, str) or not text.strip():
            raise fail('"prompt" must be a non-empty string')
        return Prompt(str(pid), text=text)
    messages = obj["messages"]
    if not isinstance(messages, list) or not messages:
        raise fail('"messages" must be a non-empty list of {"role": ..., "content": ...} objects')
    out: list[dict[str, str]] = []
    for i, m in enumerate(messages, 1):
        if not isinstance(m, dict):
            raise fail(f"message {i} is not an object")
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            raise fail(f"message {i}: role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise fail(f'message {i}: "content" must be a string')
        out.append({"role": role, "content": content})
    if not any(m["content"].strip() for m in out):
        raise fail("every message is empty")
    return Prompt(str(pid), messages=tuple(out))
