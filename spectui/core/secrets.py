"""What a secret is, for everything spectui shows, records or writes: the one definition.

Values of secret-looking flags (`--api-key`, `--admin-api-key`, `--ssl-keyfile-password`) and environment
variables (HF_TOKEN, DB_PASS, API_KEYS, MYTOKEN, *_CREDENTIAL, NPM_AUTH …) never reach a terminal, a plan,
an error message, the launch history, a bundle or a report. Free text (a log line, an environment value,
an argument) is scanned for the shapes secrets take:

- `name=value` / `name: value` where the name is a secret's (`password=`, `token:`, `api_key='…'`,
  `"hf_token": "…"`), also at the very start of a text; `#token: 5` in a decode line is not one;
- URL credentials: `scheme://user:pass@`, `redis://:pass@`, a bare token as the user part
  (Sentry DSNs `https://KEY@o1.ingest.sentry.io/2`, `https://ghp_…@github.com`), and secret query
  parameters (`?token=`, `&api_key=`, `X-Amz-Signature=` …);
- `Bearer …` and `Basic …` credentials; private-key blocks (`-----BEGIN … PRIVATE KEY-----`);
- token shapes: Yelp's detect-secrets plugins (AWS, GitHub, GitLab, Slack, JWT, npm, OpenAI, Stripe,
  SendGrid, PyPI, Azure storage, Discord, Mailchimp, Square, Telegram, URL basic auth) plus shapes it
  lacks (`hf_…`, `github_pat_…`, `AIza…`, `sk-…`, `xox?-…` with mixed case, whole JWTs);
- in an environment, a value that is one high-entropy word (detect-secrets' entropy measure), whatever
  the variable's name.

`find_secrets(text)` gives the spans, `mask_text(text)` masks them where they stand, `redact_env` masks an
environment by name and by value, `display_argv` an argv, `flag_secrets` the values of secret flags;
`secret_name`/`secret_flag`/`secret_key` say whether a variable, a flag or a key holds a secret. Every
other module asks these (no second definition anywhere: tests/trust/test_secrets_owner.py).
"""

from __future__ import annotations

import functools
import math
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

MASK = "***"

# Whole words of a name (split on _ - .): HF_TOKEN, OPENAI_API_KEY, DB_PASS, API_KEYS, NPM_AUTH.
SECRET_WORDS = frozenset({
    "TOKEN", "KEY", "KEYS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PASSPHRASE",
    "CREDENTIAL", "CREDENTIALS", "CREDS", "APIKEY", "APIKEYS", "AUTH", "AUTHTOKEN", "DSN", "PRIVATEKEY",
    "COOKIE", "SIGNATURE",
})
# Inside one word: MYTOKEN, DBPASSWORD, CLIENTSECRET (not TOKENIZERS, nor MAX_TOKENS: counts).
_SUBSTRING = re.compile(r"SECRET|PASSW(?:OR)?D|CREDENTIAL|APIKEY|TOKEN(?!IZ|S\b|S_|_?(?:NUM|COUNT|LEN|IDS?)\b)")
# Names whose last word says secret but which SGLang uses for something else.
_NOT_SECRET_NAMES = frozenset({"BUCKET_TIME_TO_FIRST_TOKEN", "PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY"})
_NOT_SECRET_VALUES = frozenset({"", "none", "null", "nil", "true", "false", MASK, "<redacted>", "redacted"})
# SGLang's own secret flags, whatever the rule above says (docs/REFERENCE.md: --api-key, --admin-api-key, …).
SGLANG_SECRET_FLAGS = frozenset({"--api-key", "--admin-api-key", "--ssl-keyfile-password", "--hf-token"})


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """A variable, flag or JSON key that holds a secret: HF_TOKEN, --api-key, api_key, DB_PASS, MYTOKEN,
    X_CREDENTIAL, NPM_AUTH, SENTRY_DSN; not TOKENIZERS_PARALLELISM, --speculative-token-map, max_tokens."""
    bare = name.strip().strip("'\"").lstrip("-")
    if not bare:
        return False
    up = bare.upper().replace("-", "_").replace(".", "_")
    if up in _NOT_SECRET_NAMES:
        return False
    words = [w for w in up.split("_") if w]
    if not words:
        return False
    if bare.isupper() or "_" not in bare and "-" not in bare:  # an env name, or one word: any word counts
        return bool(SECRET_WORDS & set(words)) or bool(_SUBSTRING.search(up))
    # A flag or a key: the last word decides (api_key, ssl_keyfile_password; not speculative_token_map).
    return words[-1] in SECRET_WORDS or bool(_SUBSTRING.search(words[-1]))


def secret_flag(word: str) -> bool:
    """`--api-key`, `--api-key=…`, `--admin-api-key`, `--hf-token` …"""
    if not word.startswith("--"):
        return False
    flag = word.split("=", 1)[0]
    return flag in SGLANG_SECRET_FLAGS or secret_name(flag)


def secret_key(name: str) -> bool:
    """A flag or a field/JSON key that holds a secret, however spelled: `--api-key`, `--api-key=…`,
    `api_key`, `hf_token`, `ssl_keyfile_password` (not `speculative_token_map`)."""
    bare = name.strip().strip("'\"")
    return secret_flag(bare) if bare.startswith("--") else secret_name(bare)


def masked_flag_value(flag: str, value: str | None) -> str | None:
    """A flag's value for display and history (`flag` with or without its dashes): a secret flag's
    value masked, an empty or absent one left as it is."""
    return MASK if value not in (None, "") and secret_flag("--" + flag.lstrip("-")) else value


# ---------------------------------------------------------------------------------------------- shapes

@dataclass(frozen=True, slots=True)
class Found:
    kind: str  # a name for what was found: "--api-key", "password", "url-password", "jwt", …
    start: int
    end: int
    assignment: bool = False  # `name=value` (kind is the name), not a flag, a URL part or a shape


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-]*")
_FLAG = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*)(=|[ \t]+)(['\"]?)([^\s'\"`]+)\3")
# `name=value`: found from the keyword (a fast literal scan), the name's start found by walking back.
# Run on an ASCII-lowercased copy: case-insensitive matching is many times slower in `re`.
_ASSIGN_WORDS = ("key", "token", "secret", "pass", "pwd", "cred", "auth", "dsn", "signature", "cookie")
_ASSIGN_TAIL = re.compile(r"[\w.-]*(['\"]?)[ \t]*[=:]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASSIGN_VALUE = re.compile(r"[ \t]*(['\"]?)([^\s'\",;()}\]`]+)\1")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_FLAG = re.compile(r"--([A-Za-z][\w-]*)")
_FLAG_VALUE = re.compile(r"(=|[ \t]+)(['\"]?)([^\s'\"`]+)\2")
# Patterns start with a literal (re then skips ahead fast); word boundaries are checked after a match.
_URL_PASS = re.compile(r"://([^\s:/?#@'\"]*):([^\s@/?#'\"]+)@")
_URL_USER_TOKEN = re.compile(r"://([A-Za-z0-9_\-]{16,})@")
_URL_QUERY = re.compile(r"[?&;]([A-Za-z][\w.\-]*)=([^&#\s'\"<>]+)")
_QUERY_SECRETS = frozenset({"sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
                            "access_token", "refresh_token", "id_token", "code", "apikey", "key", "token",
                            "auth", "password", "secret"})
_HEADER = re.compile(r"(Bearer|Basic|bearer|basic|BEARER|BASIC)[ \t]+([A-Za-z0-9._~+/=\-]{8,})")
_PRIVATE_KEY = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----(.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY"
                          r"(?: BLOCK)?-----|\Z)", re.S)
_OWN_SHAPES: tuple[tuple[str, str, re.Pattern[str]], ...] = (  # (kind, literal that must occur, pattern)
    ("hf-token", "hf_", re.compile(r"hf_[A-Za-z0-9]{30,}")),
    ("github-token", "github_pat_", re.compile(r"github_pat_[A-Za-z0-9_]{22,}")),
    ("github-token", "gh", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}")),
    ("sk-key", "sk-", re.compile(r"sk-[A-Za-z0-9_\-]{20,}")),
    ("google-api-key", "AIza", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    ("slack-token", "xox", re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("jwt", "eyJ", re.compile(r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    ("npm-token", "npm_", re.compile(r"npm_[A-Za-z0-9]{36}")),
)
# detect-secrets' regex plugins whose patterns are distinctive enough to run on a whole log.
_PLUGINS = ("AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
            "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector", "MailchimpDetector", "NpmDetector",
            "OpenAIDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SquareOAuthDetector",
            "StripeDetector")
# Literals one of which must occur for a plugin's patterns to run (a whole log is scanned: keep it fast).
_GATES: dict[str, tuple[str, ...] | re.Pattern[str]] = {"aws-access-key": ("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "aws", "AWS"), "slack-token": ("xox", "hooks.slack.com"),
          "stripe-access-key": ("k_live_",), "mailchimp-access-key": re.compile(r"-us\d"), "npm-tokens": ("_authToken",),
          "sendgrid-api-key": ("SG.",), "pypi-token": ("pypi-",), "azure-storage-account-access-key": ("AccountKey",),
          "openai-token": ("T3BlbkFJ",), "square-oauth-secret": ("sq0csp-",), "github-token": ("gh",),
          "json-web-token": ("eyJ",), "basic-auth-credentials": ("://",)}


@cache
def _plugin_patterns() -> tuple[tuple[str, tuple[str, ...] | re.Pattern[str], re.Pattern[str]], ...]:
    """(kind, gate literals, pattern) from detect-secrets' plugins; empty without the library (own shapes
    stay)."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:  # pragma: no cover - a dependency; the own shapes still apply
        return ()
    out: list[tuple[str, tuple[str, ...] | re.Pattern[str], re.Pattern[str]]] = []
    plugins: dict[str, type[Any]] = get_mapping_from_secret_type_to_class()
    for secret_type, cls in sorted(plugins.items()):
        if cls.__name__ in _PLUGINS:
            kind = re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")
            out.extend((kind, _GATES.get(kind, ()), rx) for rx in cls().denylist)
    return tuple(out)


def _at(text: str, literal: str, rx: re.Pattern[str], skip: int = 0) -> Iterator[re.Match[str]]:
    """`rx.match` at each occurrence of `literal` (+ `skip`): str.find is many times faster than letting
    `re` look for a pattern whose first character is common (':' in timestamps, 'B' …)."""
    i = text.find(literal)
    while i >= 0:
        m = rx.match(text, i + skip)
        if m is not None:
            yield m
        i = text.find(literal, (m.end() if m is not None and m.end() > i else i + 1))


def _word_start(text: str, i: int) -> bool:
    return i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")


def _plain_value(value: str) -> bool:
    return value.strip("'\"").lower() in _NOT_SECRET_VALUES or value.startswith(MASK)


def _assignment(text: str, start: int, m: re.Match[str]) -> Iterator[Found]:
    """A `name=value` whose keyword starts at `start` and whose `=`/`:` ends `m`: the name's start found
    by walking back, `#token: 5` (a decode line), paths and flags left alone."""
    while start and text[start - 1] in _NAME_CHARS:
        start -= 1
    quote = m.group(1)
    if quote:
        if not start or text[start - 1] != quote:
            return
        start -= 1
    if start and text[start - 1] in "#/-.":
        return
    name = text[start:m.end()].rstrip("=: \t").strip("'\"")
    if not name or not (name[0].isalpha() or name[0] == "_") or not secret_name(name):
        return
    v = _ASSIGN_VALUE.match(text, m.end())
    if v is None or _plain_value(v.group(2)):
        return
    if v.group(2).isdigit() and "_" not in name and "-" not in name:
        return  # `token: 5046`: a count, not a secret (a one-word name with a number)
    yield Found(name, v.start(2), v.end(2), True)


def _spans(text: str) -> Iterator[Found]:
    for m in _PRIVATE_KEY.finditer(text) if "PRIVATE KEY" in text else ():
        if m.group(3).strip():
            yield Found("private-key", m.start(3), m.end(3))
    for m in _at(text, "--", _FLAG):
        if m.start() and text[m.start() - 1] in _NAME_CHARS or not secret_flag("--" + m.group(1)):
            continue
        v = _FLAG_VALUE.match(text, m.end())
        if v and not v.group(3).startswith("-") and not _plain_value(v.group(3)):
            yield Found("--" + m.group(1), v.start(3), v.end(3))
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lower case is longer (U+0130): keep indices aligned
        lower = text.translate(_ASCII_LOWER)
    for word in _ASSIGN_WORDS:
        for m in _at(lower, word, _ASSIGN_TAIL, len(word)):
            yield from _assignment(text, m.start() - len(word), m)
    for m in _at(text, "://", _URL_PASS):
        yield Found("url-password", m.start(2), m.end(2))
    for m in _at(text, "://", _URL_USER_TOKEN):
        yield Found("url-token", m.start(1), m.end(1))
    for m in _URL_QUERY.finditer(text) if "=" in text and ("?" in text or "&" in text) else ():
        name = m.group(1)
        if (name.lower() in _QUERY_SECRETS or secret_name(name)) and not _plain_value(m.group(2)):
            yield Found(f"url-{name.lower()}", m.start(2), m.end(2))
    for literal in ("earer", "asic", "EARER", "ASIC"):
        for m in _at(text, literal, _HEADER, -1):
            if _word_start(text, m.start()):
                kind = "bearer-token" if m.group(1).lower() == "bearer" else "basic-credentials"  # bundle names
                yield Found(kind, m.start(2), m.end(2))
    for kind, literal, rx in _OWN_SHAPES:
        for m in rx.finditer(text) if literal in text else ():
            if _word_start(text, m.start()):
                yield Found(kind, m.start(), m.end())
    for kind, gates, rx in _plugin_patterns():
        if isinstance(gates, re.Pattern) and not gates.search(text) or \
                isinstance(gates, tuple) and gates and not any(g in text for g in gates):
            continue
        for m in rx.finditer(text):
            start, end = (m.start(1), m.end(1)) if rx.groups and m.group(1) else (m.start(), m.end())
            # A pattern that stops at a character class (Slack's lowercase tail) masks the whole token.
            if kind != "basic-auth-credentials" and (tail := _TOKEN_CHARS.match(text, end)) is not None:
                end = tail.end()  # always a match (the pattern may be empty)
            if end - start >= 8:
                yield Found(kind, start, end)


def find_secrets(text: str) -> list[Found]:
    """The secrets in `text` as non-overlapping spans, in order (the longest wins where two overlap)."""
    if not text:
        return []
    found = sorted(_spans(text), key=lambda f: (f.start, -(f.end - f.start)))
    out: list[Found] = []
    for f in found:
        if f.end <= f.start:
            continue
        if out and f.start < out[-1].end:
            if f.end > out[-1].end:
                out[-1] = Found(out[-1].kind, out[-1].start, f.end, out[-1].assignment)
            continue
        out.append(f)
    return out


def mask_text(text: str, on_hit: Callable[[str, str], None] | None = None) -> str:
    """`text` with every secret found masked where it stands; `on_hit(kind, value)` for each."""
    spans = find_secrets(text)
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for f in spans:
        parts.append(text[pos:f.start])
        parts.append(MASK)
        if on_hit is not None:
            on_hit(f.kind, text[f.start:f.end])
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


# ------------------------------------------------------------------------------------------ environment

_ONE_WORD = re.compile(r"[A-Za-z0-9+=_\-]{20,}")  # no '/' nor '.': paths, model ids, versions are not keys
_HEX = frozenset("0123456789abcdefABCDEF")


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def high_entropy_value(value: str) -> bool:
    """One word of random-looking characters (a key, a token, a password manager's output): detect-secrets'
    limits (base64 4.5 bits a character; hex 3.0), lowered a little for shorter words."""
    if not _ONE_WORD.fullmatch(value):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    limit = 3.0 if set(value) <= _HEX else 4.0 if len(value) < 40 else 4.5
    return _entropy(value) >= limit


def env_value_masked(name: str, value: str) -> str:
    """One variable's value for display: all of it when the name says secret or the value is one
    high-entropy word, else the secrets found in it (a password in a URL …)."""
    if secret_name(name):
        return MASK if value else value
    if high_entropy_value(value):
        return MASK
    return mask_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Environment for display: masked by name (HF_TOKEN …) and by value (MY_DB_URL=postgres://a:***@h)."""
    return {k: env_value_masked(k, v) if isinstance(v, str) else v for k, v in env.items()}


# ------------------------------------------------------------------------------------------------ argv

def flag_secrets(argv: Sequence[str]) -> dict[str, str]:
    """The values of secret flags in `argv` by flag: `--api-key sk-…`, `--admin-api-key=…`."""
    out: dict[str, str] = {}
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if secret_flag(word) and eq:
            out[flag] = value
        elif i and secret_flag(argv[i - 1]) and "=" not in argv[i - 1] and not word.startswith("--"):
            out[argv[i - 1]] = word
    return out


def mask_argv(argv: Sequence[str]) -> tuple[str, dict[str, str]]:
    """An argv as a shell line masked exactly as `display_argv` shows it, and the secret flags' values
    by flag (`flag_secrets`): an editor shows the line and puts the values back (`unmask_argv`)."""
    return display_argv(list(argv)), flag_secrets(list(argv))


def unmask_argv(words: Sequence[str], secrets: Mapping[str, str]) -> list[str]:
    """Edited words with each masked value left as shown (`***`, `--flag=***`) replaced by the real one."""
    out: list[str] = []
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if eq and value == MASK and flag in secrets and secret_flag(flag):
            word = f"{flag}={secrets[flag]}"
        elif word == MASK and i and words[i - 1] in secrets:
            word = secrets[words[i - 1]]
        out.append(word)
    return out


def secret_values(argv: Sequence[str] = (), env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value in an argv and an environment (flags, variables by name and by value, shapes
    in any word), longest first: for scrubbing text that may echo them (argparse errors, logs)."""
    values: set[str] = set(flag_secrets(argv).values())
    for word in argv:
        mask_text(word, lambda _k, v: values.add(v))
    for name, value in (env or {}).items():
        if secret_name(name) or high_entropy_value(value):
            values.add(value)
        else:
            mask_text(value, lambda _k, v: values.add(v))
    return sorted((v for v in values if len(v) >= 3 and not _plain_value(v)), key=len, reverse=True)


def display_argv(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """One argv as a shell line for display and history: values of secret flags (`--api-key`), of
    secret environment variables (HF_TOKEN=…) and every secret shape in any word are masked."""
    shown_env = redact_env(dict(env or {}))
    shown: list[str] = []
    for i, word in enumerate(argv):
        head, eq, tail = word.partition("=")
        if i and secret_flag(argv[i - 1]) and "=" not in argv[i - 1] and not word.startswith("--"):
            word = MASK
        elif secret_flag(word) and eq:
            word = head + "=" + MASK
        elif eq and re.fullmatch(r"[A-Za-z_]\w*", head) and (head in shown_env or secret_name(head)):
            word = head + "=" + env_value_masked(head, tail)
        else:
            word = mask_text(word)
        shown.append(word)
    return shlex.join(shown)


def scrub(text: str, values: Sequence[str]) -> str:
    """`text` with each known secret value (`secret_values`) and every secret shape masked."""
    for value in sorted(values, key=len, reverse=True):
        if value:
            text = text.replace(value, MASK)
    return mask_text(text)
