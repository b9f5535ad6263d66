"""Secret masking for everything that leaves the machine in a bundle or a report.

What a secret is comes from `spectui.core.secrets` (the one definition: names, flags, shapes in text,
environments by name and by value). This module adds what a bundle needs: secrets are *harvested* first
from every part (argv, environment, JSON keys, free text), then every harvested value is replaced by `***`
wherever it occurs, in every member, raw, URL-encoded and JSON-escaped. Only names are recorded, never
values.

Values shorter than MIN_GLOBAL_LEN characters are masked only where they stand (after the flag, in the
secret key, after `NAME=`): replacing "abc" everywhere would wreck the log.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from spectui.core import secrets as core

MASK = core.MASK
MIN_GLOBAL_LEN = 4
_NOT_SECRET = frozenset({"", "none", "null", "nil", "true", "false", "***", "<redacted>", "redacted"})


def secret_env_name(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, DB_PASS, MYTOKEN, X_CREDENTIAL, NPM_AUTH: core.secrets.secret_name."""
    return core.secret_name(name.strip().upper()) if name.strip() else False


def _display_name(name: str) -> str:
    bare = name.strip().strip("'\"")
    return bare if bare.startswith("--") or bare.isupper() else bare.lstrip("-")


class Masker:
    """Collect secret values (`harvest_*`), then mask them (`scrub_*`). `masked` maps each secret's
    name to the members it was masked in; values are kept only in memory."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}  # value -> name (global replacement)
        self.names: set[str] = set()
        self.masked: dict[str, set[str]] = {}
        self._pattern: re.Pattern[str] | None = None

    # ---- harvesting ---------------------------------------------------------------------------------
    def add(self, name: str, value: object) -> None:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return
        v = str(value).strip().strip("'\"")
        if v.lower() in _NOT_SECRET or MASK in v:
            return
        name = _display_name(name)
        self.names.add(name)
        if len(v) < MIN_GLOBAL_LEN:
            return
        for form in {v, unquote(v), quote(v, safe="")}:
            if len(form) >= MIN_GLOBAL_LEN:
                self._values.setdefault(form, name)
        self._pattern = None

    def harvest_env(self, env: Mapping[str, Any] | None) -> None:
        """By name (HF_TOKEN …) and by value (a password in a URL, a token shape, one high-entropy word)."""
        for key, value in (env or {}).items():
            if secret_env_name(str(key)):
                self.add(str(key), value)
            elif isinstance(value, str):
                if core.high_entropy_value(value):
                    self.add(str(key), value)
                self.harvest_text(value)

    def harvest_argv(self, argv: Sequence[str]) -> None:
        for i, word in enumerate(argv):
            head, eq, tail = word.partition("=")
            if word.startswith("--") and core.secret_key(head):
                if eq:
                    self.add(head, tail)
                elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                    self.add(head, argv[i + 1])
            elif eq and re.fullmatch(r"[A-Za-z_]\w*", head) and secret_env_name(head):
                self.add(head, tail)
            self.harvest_text(word)

    def harvest_command(self, command: str | Sequence[str] | None) -> None:
        if not command:
            return
        if isinstance(command, str):
            with contextlib.suppress(ValueError):
                self.harvest_argv(shlex.split(command.replace("\\\n", " "), comments=True))
            self.harvest_text(command)
        else:
            self.harvest_argv([str(w) for w in command])

    def harvest_text(self, text: str, *, assignments: bool = True) -> None:
        """Secret values in free text (core.secrets.find_secrets). `assignments=False` keeps only values
        sure enough to mask everywhere (flags, URLs, token shapes) from `name=value` ones."""
        if not text:
            return
        for f in core.find_secrets(text):
            value = text[f.start:f.end]
            if not f.assignment or assignments and _global_value(f.kind, value):
                self.add(f.kind, value)
            else:
                self.names.add(_display_name(f.kind))

    def harvest_json(self, obj: Any) -> None:
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                if core.secret_key(str(key)):
                    for v in value if isinstance(value, list) else [value]:
                        self.add(str(key), v)
                else:
                    self.harvest_json(value)
        elif isinstance(obj, list | tuple):
            for item in obj:
                self.harvest_json(item)
        elif isinstance(obj, str):
            self.harvest_text(obj)

    # ---- masking ------------------------------------------------------------------------------------
    def _hit(self, name: str, member: str) -> None:
        self.masked.setdefault(name, set()).add(member)

    def _global(self) -> re.Pattern[str] | None:
        if self._pattern is None and self._values:
            alts = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in alts))
        return self._pattern

    def scrub_text(self, text: str, member: str = "") -> str:
        """Mask secrets where they stand (core.secrets.mask_text) and every harvested value anywhere."""
        if not text:
            return text
        pattern = self._global()
        if pattern is not None:  # harvested values first: each is named by where it was found

            def value(m: re.Match[str]) -> str:
                self._hit(self._values[m.group(0)], member)
                return MASK

            text = pattern.sub(value, text)
        return core.mask_text(text, lambda kind, _v: self._hit(_display_name(kind), member))

    def scrub_bytes(self, data: bytes, member: str = "") -> bytes:
        """Bytes of a text member (log, prom); undecodable bytes survive unchanged."""
        text = data.decode("utf-8", "surrogateescape")
        return self.scrub_text(text, member).encode("utf-8", "surrogateescape")

    def scrub_json(self, obj: Any, member: str = "") -> Any:
        """A JSON value with secret keys' values masked and every string scrubbed."""
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, value in obj.items():
                k = self.scrub_text(str(key), member)
                if core.secret_key(str(key)) and value not in (None, "", [], {}) and not isinstance(value, bool):
                    self._hit(_display_name(str(key)), member)
                    out[k] = [MASK for _ in value] if isinstance(value, list) else MASK
                else:
                    out[k] = self.scrub_json(value, member)
            return out
        if isinstance(obj, list | tuple):
            return [self.scrub_json(v, member) for v in obj]
        if isinstance(obj, str):
            return self.scrub_text(obj, member)
        return obj

    def scrub_env(self, env: Mapping[str, Any] | None, member: str = "") -> dict[str, Any]:
        """Environment for a member: core's `redact_env` (by name and by value), then scrubbed."""
        env = {str(k): "" if v is None else str(v) for k, v in (env or {}).items()}
        out: dict[str, Any] = {}
        for key, raw in env.items():
            if secret_env_name(key) or core.high_entropy_value(raw):
                if raw not in ("", MASK):
                    self._hit(key, member)
                out[key] = MASK
            else:
                out[key] = self.scrub_text(raw, member)
        return out

    def scrub_argv(self, argv: Sequence[str], env: Mapping[str, str] | None, member: str = "") -> str:
        """One argv as a shell line (core's `display_argv`), then scrubbed for values found elsewhere."""
        words = [str(w) for w in argv]
        for i, word in enumerate(words):
            head, eq, _ = word.partition("=")
            if word.startswith("--") and core.secret_key(head) and (eq or i + 1 < len(words)):
                self._hit(_display_name(head), member)
            elif eq and re.fullmatch(r"[A-Za-z_]\w*", head) and secret_env_name(head):
                self._hit(head, member)
        line = core.display_argv(words, {str(k): str(v) for k, v in (env or {}).items()})
        return self.scrub_text(line, member)

    def final_pass(self, data: bytes, member: str) -> bytes:
        """Last line of defence on a member's final bytes: each harvested value, raw or JSON-escaped."""
        for value, name in sorted(self._values.items(), key=lambda kv: -len(kv[0])):
            for form in {value.encode(), json.dumps(value)[1:-1].encode()}:
                if form in data:
                    data = data.replace(form, MASK.encode())
                    self._hit(name, member)
        return data

    def leaks(self, data: bytes) -> list[str]:
        """Names of harvested secrets whose value still occurs in `data` (empty when clean)."""
        return sorted({name for value, name in self._values.items() if value.encode() in data})

    def masked_names(self) -> list[dict[str, Any]]:
        return [{"name": n, "members": sorted(m)} for n, m in sorted(self.masked.items())]


def _global_value(name: str, value: str) -> bool:
    """`api_key=…`, `HF_TOKEN=…` are sure enough to mask that value everywhere; a bare `token:` or
    `key=` only when its value is long enough not to be a common word or a number."""
    bare = name.strip("'\"")
    if re.fullmatch(r"[\d.:-]+", value):
        return False
    compound = bare.isupper() or len(re.split(r"[_\-.]", bare)) > 1
    return len(value) >= (MIN_GLOBAL_LEN if compound else 8)
