"""SGLang's own message catalogue: every error, assertion and warning text `sglang/srt` prints, per release.

Built from the release wheels by spectui/data/dump_messages.py into spectui/data/messages/ (gzip JSON). A
text keeps its literal parts with `{}` for each interpolated value; `pattern` turns it into a regex. Rules
reference entries in a log clause's `catalogue` list, each item a message id ("M1a2b3c4d5") or a family: a
fragment of SGLang's text (every message whose text contains it). A reference that matches no message of
any release is a load error, so `spectui rules test` fails when a rule's text is gone from SGLang.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

CATALOGUE_FILE = "sglang-messages.json.gz"
MAX_FAMILY = 64  # a family bigger than this is too vague to be a rule's text


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    kind: str  # "raise", "assert", "log"
    level: str  # exception class ("RuntimeError", "AssertionError") or log level ("warning", "error")
    text: str  # literal parts, "{}" per interpolated value, "{{" / "}}" literal braces
    module: str  # sglang/srt/... (latest release printing it)
    function: str
    releases: tuple[str, ...]
    subsystem: str
    spec: str  # speculative-decoding part ("eagle", "ngram", "spec", ...) or ""

    @property
    def release_range(self) -> str:
        first, last = self.releases[0], self.releases[-1]
        return first if first == last else f"{first}..{last}"

    def plain(self) -> str:
        return self.text.replace("{}", "…").replace("{{", "{").replace("}}", "}")


def text_pattern(text: str) -> str:
    """A catalogue text as a regex: literal parts escaped (runs of blanks match any whitespace), `{}` -> (.+?)."""
    out = []
    for i, part in enumerate(text.split("{}")):
        if i:
            out.append("(?:.+?)")
        literal = part.replace("{{", "{").replace("}}", "}")
        out.append(r"\s+".join(re.escape(w) for w in literal.split(" ")))
    return "".join(out)


HEAD_CHARS = 20  # literal characters enough to recognise a message by its start


def head_pattern(text: str) -> str:
    """The pattern a rule matches with: the text up to the first placeholder after which HEAD_CHARS literal
    characters are already known. A log often holds only the start of a long message (a paste cut short;
    the exception's own text printed first and SGLang's advice after it, on later lines)."""
    parts = text.split("{}")
    kept, chars = [parts[0]], len(parts[0].strip())
    for part in parts[1:]:
        if chars >= HEAD_CHARS:
            break
        kept.append(part)
        chars += len(part.strip())
    return text_pattern("{}".join(kept))


@dataclass(frozen=True, slots=True)
class Catalogue:
    releases: tuple[str, ...]
    messages: tuple[Message, ...]

    def resolve(self, ref: str) -> list[Message]:
        """The messages a rule reference names: an id, else every text containing the fragment."""
        if re.fullmatch(r"M[0-9a-f]{9}", ref):
            return [m for m in self.messages if m.id == ref]
        return [m for m in self.messages if ref in m.text]

    def summary(self) -> dict[str, Any]:
        return {"releases": list(self.releases), "messages": len(self.messages)}


def message_id(kind: str, level: str, text: str) -> str:
    """The id dump_messages.py gives a message (stable across rebuilds: a hash of what it is)."""
    import hashlib

    return "M" + hashlib.sha1(f"{kind}\0{level}\0{text}".encode()).hexdigest()[:9]


def parse_catalogue(data: dict[str, Any]) -> Catalogue:
    releases = tuple(data["releases"])
    modules, functions = data["modules"], data["functions"]
    messages = []
    for kind, level, text, mi, fi, mask, subsystem, spec in data["messages"]:
        rel = tuple(r for bit, r in enumerate(releases) if mask >> bit & 1)
        messages.append(Message(message_id(kind, level, text), kind, level, text, modules[mi], functions[fi], rel,
                                subsystem, spec))
    return Catalogue(releases, tuple(messages))


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue | None:
    """The bundled catalogue, or None when spectui was installed without it."""
    try:
        raw = resources.files("spectui").joinpath("data", "messages", CATALOGUE_FILE).read_bytes()
    except (OSError, FileNotFoundError):
        return None
    return parse_catalogue(json.loads(gzip.decompress(raw)))


@dataclass(frozen=True, slots=True)
class CatalogueRef:
    """A log clause's compiled `catalogue` references: one regex over every message they name, and per message
    (id, head pattern, release range, "module:function") so a match names its message without the catalogue."""

    refs: tuple[str, ...]
    entries: tuple[tuple[str, str, str, str], ...]
    regex: re.Pattern[str]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e[0] for e in self.entries)

    def which(self, text: str) -> tuple[str, str, str] | None:
        """(id, release range, source) of the first referenced message `text` matches."""
        for mid, head, releases, source in self.entries:
            if re.search(head, text):
                return mid, releases, source
        return None


class CatalogueError(ValueError):
    pass


def compile_refs(refs: list[str]) -> CatalogueRef:
    cat = load_catalogue()
    if cat is None:
        raise CatalogueError("the message catalogue (spectui/data/messages/) is not installed")
    found: list[Message] = []
    for ref in refs:
        hits = cat.resolve(ref)
        if not hits:
            raise CatalogueError(f"{ref!r} matches no message of any SGLang release in the catalogue "
                                 f"({cat.releases[0]}..{cat.releases[-1]}, {len(cat.releases)} releases)")
        if len(hits) > MAX_FAMILY:
            raise CatalogueError(f"{ref!r} matches {len(hits)} messages: too vague (at most {MAX_FAMILY})")
        found += [m for m in hits if m not in found]
    entries = tuple((m.id, head_pattern(m.text), m.release_range, f"{m.module}:{m.function}") for m in found)
    heads = list(dict.fromkeys(e[1] for e in entries))
    return CatalogueRef(tuple(refs), entries, re.compile("|".join(f"(?:{h})" for h in heads)))
