"""Prompt sets: the bundled ones are sound; a user's JSONL loads; a broken line names file and line."""

from __future__ import annotations

import json

import pytest

from spectui.load import BUNDLED, PromptFileError, load_prompts


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_sets_are_varied_chat_prompts(name: str) -> None:
    ps = load_prompts(name)
    assert 24 <= len(ps) <= 40
    assert ps.source == "bundled"
    assert all(p.is_chat and p.id.startswith(name) for p in ps.prompts)
    assert len({p.id for p in ps.prompts}) == len(ps)
    assert len({p.as_messages()[-1]["content"] for p in ps.prompts}) == len(ps)  # no duplicate asks


def test_mixed_is_every_bundled_set() -> None:
    mixed = load_prompts("mixed")
    assert len(mixed) == sum(len(load_prompts(n)) for n in BUNDLED)
    assert len({p.id for p in mixed.prompts}) == len(mixed)


def test_user_file_with_plain_and_chat_lines(tmp_path) -> None:
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps({"prompt": "Say hi."}) + "\n\n"
                 + json.dumps({"id": "q2", "messages": [{"role": "system", "content": "Be brief."},
                                                       {"role": "user", "content": "Why is the sky blue?"}]}) + "\n")
    ps = load_prompts(str(f))
    assert [p.id for p in ps.prompts] == ["mine-1", "q2"]
    plain, chat = ps.prompts
    assert not plain.is_chat and plain.as_messages() == [{"role": "user", "content": "Say hi."}]
    assert chat.is_chat and chat.as_messages()[0]["role"] == "system"


@pytest.mark.parametrize(("line", "why"), [
    ('{"prompt": "ok"', "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"text": "wrong key"}', 'no "prompt" or "messages"'),
    ('{"prompt": "a", "messages": []}', "exactly one of"),
    ('{"prompt": ""}', "non-empty string"),
    ('{"messages": [{"role": "robot", "content": "x"}]}', "role must be one of"),
    ('{"messages": [{"role": "user", "content": 3}]}', '"content" must be a string'),
    ('{"messages": "hello"}', "non-empty list"),
])
def test_broken_line_names_file_and_line(tmp_path, line: str, why: str) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "first"}\n' + "\n" + '{"prompt": "third"}\n' + line + "\n")
    with pytest.raises(PromptFileError) as info:
        load_prompts(str(f))
    err = info.value
    assert err.exit_code == 2 and err.line == 4
    assert str(err).startswith(f"{f}:4: ") and why in str(err)


def test_missing_file_unknown_set_and_empty_file(tmp_path) -> None:
    with pytest.raises(PromptFileError, match="no such file, and not a bundled set"):
        load_prompts("nonsense")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    with pytest.raises(PromptFileError, match="no prompts") as info:
        load_prompts(str(empty))
    assert info.value.line is None


def test_duplicate_ids_and_bad_encoding(tmp_path) -> None:
    f = tmp_path / "dup.jsonl"
    f.write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    with pytest.raises(PromptFileError, match=r"dup.jsonl:2: duplicate id 'a'"):
        load_prompts(str(f))
    g = tmp_path / "latin.jsonl"
    g.write_bytes(b'{"prompt": "ok"}\n{"prompt": "caf\xe9"}\n')
    with pytest.raises(PromptFileError, match=r"latin.jsonl:2: not UTF-8"):
        load_prompts(str(g))
