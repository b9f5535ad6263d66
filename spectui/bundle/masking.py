"""Secret masking for everything that leaves the machine in a bundle or a report.

Builds on `spectui.core.secrets` (its SECRET_WORDS, `redact_env`, `display_argv`) and adds what a bundle
needs: secrets are *harvested* first — `--api-key`-style flag values, secret-looking environment
variables (HF_TOKEN, *_KEY, *_TOKEN, *SECRET*, *PASSWORD*), secret keys in JSON (`"api_key": ...`),
`name=value` assignments in text (`api_key='…'` in the `server_args=` line), `Bearer` tokens, passwords in
URLs (`scheme://user:pass@host`) and well-known token shapes (`hf_…`) — then every harvested value is
replaced by `***` wherever it occurs, in every member. Only names are recorded, never values.

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

from spectui.core.secrets import SECRET_WORDS, display_argv, redact_env

MASK = "***"
MIN_GLOBAL_LEN = 4
_NOT_SECRET = frozenset({"", "none", "null", "nil", "true", "false", "***", "<redacted>", "redacted"})
_SUBSTRINGS = ("SECRET", "PASSWORD", "PASSWD")

# Each pattern starts with a literal (or is only run when its literal occurs): regex scans of a
# multi-megabyte log stay fast.
_FLAG_RE = re.compile(r"--(?<![\w-]--)([A-Za-z][\w-]*)(=|[ \t]+)(['\"]?)([^\s'\"`]+)\3")
_ASSIGN_RE = re.compile(
    r"(?<![\w.#-])(['\"]?)((?i:[A-Za-z_][\w.-]*?(?:key|token|secret|passw(?:or)?d|credentials)[\w.-]*))\1"
    r"([ \t]*[=:][ \t]*)(['\"]?)([^\s'\",;()}\]`]+)\4"
)
_BEARER_RE = re.compile(r"(\b[Bb]earer[ \t]+)([A-Za-z0-9._~+/=-]{8,})")
_URL_RE = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s:/@'\"]+):([^\s@/'\"]+)@")
_SHAPES = (  # (name, literal that must occur, pattern)
    ("hf-token", "hf_", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("github-token", "_", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("sk-key", "sk-", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
)


def secret_env_name(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, DB_PASSWORD, MYSECRET: core's whole-word rule plus *SECRET*/*PASSWORD*."""
    up = name.strip().upper()
    if not up:
        return False
    return bool(redact_env({up: "x"})[up] == "***") or any(s in up for s in _SUBSTRINGS)


def secret_key_name(name: str) -> bool:
    """A flag or field name (`--api-key`, `api_key`, `hf_token`, `ssl_keyfile_password`): the last word
    decides, as in core (`speculative_token_map` is not a secret); all-caps names follow the env rule."""
    bare = name.strip().strip("'\"").lstrip("-")
    if not bare:
        return False
    if bare.isupper():
        return secret_env_name(bare)
    up = bare.upper()
    return re.split(r"[_\-.]", up)[-1] in SECRET_WORDS or any(s in up for s in _SUBSTRINGS)


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
        for key, value in (env or {}).items():
            if secret_env_name(str(key)):
                self.add(str(key), value)
            elif isinstance(value, str):
                self.harvest_text(value)

    def harvest_argv(self, argv: Sequence[str]) -> None:
        for i, word in enumerate(argv):
            head, eq, tail = word.partition("=")
            if word.startswith("--") and secret_key_name(head):
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
        """Secret values in free text. `assignments=False` skips `name=value` (the slowest scan): for
        the parts of a long log that are not kept."""
        if not text:
            return
        for m in _FLAG_RE.finditer(text):
            if secret_key_name(m.group(1)) and not m.group(4).startswith("-"):
                self.add("--" + m.group(1), m.group(4))
        for m in _ASSIGN_RE.finditer(text) if assignments else ():
            if secret_key_name(m.group(2)):
                if _global_name(m.group(2)) and not re.fullmatch(r"[\d.:-]+", m.group(5)):
                    self.add(m.group(2), m.group(5))
                else:
                    self.names.add(_display_name(m.group(2)))
        for m in _BEARER_RE.finditer(text) if "earer" in text else ():
            self.add("bearer-token", m.group(2))
        for m in _URL_RE.finditer(text) if "://" in text else ():
            self.add("url-password", m.group(3))
        for name, literal, rx in _SHAPES:
            for m in rx.finditer(text) if literal in text else ():
                self.add(name, m.group(0))

    def harvest_json(self, obj: Any) -> None:
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                if secret_key_name(str(key)):
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
        """Mask secrets where they stand (flag values, assignments, URLs, Bearer) and every harvested
        value anywhere."""
        if not text:
            return text

        def flag(m: re.Match[str]) -> str:
            if not secret_key_name(m.group(1)) or m.group(4).startswith(("-", MASK)):
                return m.group(0)
            self._hit("--" + m.group(1), member)
            return f"--{m.group(1)}{m.group(2)}{m.group(3)}{MASK}{m.group(3)}"

        def assign(m: re.Match[str]) -> str:
            if not secret_key_name(m.group(2)) or m.group(5).startswith(MASK) or m.group(5).lower() in _NOT_SECRET:
                return m.group(0)
            self._hit(_display_name(m.group(2)), member)
            q, vq = m.group(1), m.group(4)
            return f"{q}{m.group(2)}{q}{m.group(3)}{vq}{MASK}{vq}"

        def bearer(m: re.Match[str]) -> str:
            self._hit("bearer-token", member)
            return m.group(1) + MASK

        def url(m: re.Match[str]) -> str:
            self._hit("url-password", member)
            return f"{m.group(1)}{m.group(2)}:{MASK}@"

        text = _FLAG_RE.sub(flag, text)
        text = _ASSIGN_RE.sub(assign, text)
        if "earer" in text:
            text = _BEARER_RE.sub(bearer, text)
        if "://" in text:
            text = _URL_RE.sub(url, text)
        pattern = self._global()
        if pattern is not None:

            def value(m: re.Match[str]) -> str:
                self._hit(self._values[m.group(0)], member)
                return MASK

            text = pattern.sub(value, text)
        for name, literal, rx in _SHAPES:
            if literal not in text:
                continue
            text, n = rx.subn(MASK, text)
            if n:
                self._hit(name, member)
        return text

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
                if secret_key_name(str(key)) and value not in (None, "", [], {}) and not isinstance(value, bool):
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
        """Environment for a member: core's `redact_env` plus the wider env rule, then scrubbed."""
        env = {str(k): "" if v is None else str(v) for k, v in (env or {}).items()}
        shown = redact_env(env)
        out: dict[str, Any] = {}
        for key, raw in env.items():
            if shown[key] == MASK or secret_env_name(key):
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
            if word.startswith("--") and secret_key_name(head) and (eq or i + 1 < len(words)):
                self._hit(_display_name(head), member)
            elif eq and re.fullmatch(r"[A-Za-z_]\w*", head) and secret_env_name(head):
                self._hit(head, member)
        line = display_argv(words, {str(k): str(v) for k, v in (env or {}).items()})
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


def _global_name(name: str) -> bool:
    """`api_key=`, `HF_TOKEN=` are sure enough to mask that value everywhere; a bare `token:` or `key=`
    is masked only where it stands."""
    bare = name.strip("'\"")
    return bare.isupper() or len(re.split(r"[_\-.]", bare)) > 1

