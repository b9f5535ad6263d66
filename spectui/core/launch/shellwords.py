"""A small POSIX-shell tokenizer for pasted launch commands: words, operators, redirections, comments.

shlex alone loses what a launch command needs: which words were quoted (an assignment `A="x y"` vs a
quoted `"A=x"`), where `$VAR` stays live, command separators (`&&`, `;`, newline, `&`) and redirections
(`> log 2>&1`). Nothing is expanded or executed: `$PORT` stays the text `$PORT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spectui.errors import CommandParseError

SEPARATORS = ("&&", "||", ";", "|", "&", "\n")
_REDIRECT_OPS = ("&>>", "&>", ">>", ">&", "<&", ">|", "<<", ">", "<")
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w.\-]*>")


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    kind: str  # "word", "sep", "redirect"
    quoted_from: int = -1  # index in `text` of the first quoted character (-1: nothing quoted)
    live_vars: tuple[str, ...] = ()  # `$NAME` / `${NAME}` / `$(...)` left for the shell to expand

    @property
    def is_assignment(self) -> bool:
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*=", self.text)
        return m is not None and (self.quoted_from < 0 or self.quoted_from >= m.end())


def tokenize(text: str) -> list[Token]:
    """Split shell text into tokens; raises CommandParseError on an unbalanced quote."""
    out: list[Token] = []
    buf: list[str] = []
    quoted_from = -1
    live: list[str] = []
    in_word = False
    i, n = 0, len(text)

    def flush() -> None:
        nonlocal buf, quoted_from, live, in_word
        if in_word:
            out.append(Token("".join(buf), "word", quoted_from, tuple(live)))
        buf, quoted_from, live, in_word = [], -1, [], False

    def mark_quoted() -> None:
        nonlocal quoted_from, in_word
        if quoted_from < 0:
            quoted_from = len(buf)
        in_word = True

    def read_var(j: int) -> int:
        m = re.match(r"\$(\{[^}]*\}|\([^)]*\)|[A-Za-z_][A-Za-z0-9_]*|[0-9#?@*$!-])", text[j:])
        if not m:
            buf.append("$")
            return j + 1
        buf.append(m.group(0))
        live.append(m.group(0))
        return j + len(m.group(0))

    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2  # line continuation
                continue
            if i + 1 < n:
                mark_quoted()
                buf.append(text[i + 1])
                i += 2
                continue
            i += 1
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise CommandParseError("unbalanced single quote in the command; close it and try again")
            mark_quoted()
            buf.append(text[i + 1:end])
            i = end + 1
            continue
        if c == '"':
            mark_quoted()
            j = i + 1
            while True:
                if j >= n:
                    raise CommandParseError("unbalanced double quote in the command; close it and try again")
                d = text[j]
                if d == '"':
                    break
                if d == "\\" and j + 1 < n and text[j + 1] in '"\\$`\n':
                    if text[j + 1] != "\n":
                        buf.append(text[j + 1])
                    j += 2
                    continue
                if d == "$":
                    j = read_var(j)
                    continue
                buf.append(d)
                j += 1
            i = j + 1
            continue
        if c == "$":
            in_word = True
            i = read_var(i)
            continue
        if c in " \t\r":
            flush()
            i += 1
            continue
        if c == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "<" and (m := _PLACEHOLDER.match(text, i)):
            # `<MODEL_PATH>` pasted from docs: a placeholder, not a redirection.
            in_word = True
            buf.append(m.group(0))
            i = m.end()
            continue
        if c in "&|;\n<>":
            fd = ""
            if in_word and quoted_from < 0 and "".join(buf).isdigit() and c in "<>":
                fd = "".join(buf)
                buf, in_word = [], False
            flush()
            op = next((o for o in _REDIRECT_OPS if text.startswith(o, i)), None)
            if op is not None and not text.startswith("&&", i):
                i += len(op)
                target = ""
                if op in (">&", "<&") and (m := re.match(r"\d+-?|-", text[i:])):
                    target = m.group(0)
                    i += len(target)
                out.append(Token(fd + op + target, "redirect"))
                continue
            sep = next(s for s in SEPARATORS if text.startswith(s, i))
            out.append(Token(sep, "sep"))
            i += len(sep)
            continue
        in_word = True
        buf.append(c)
        i += 1
    flush()
    return out


def split_commands(tokens: list[Token]) -> list[tuple[list[Token], str]]:
    """[(tokens of one simple command, the separator that ended it)]; empty commands dropped."""
    cmds: list[tuple[list[Token], str]] = []
    cur: list[Token] = []
    for t in tokens:
        if t.kind == "sep":
            if cur:
                cmds.append((cur, t.text))
            cur = []
        else:
            cur.append(t)
    if cur:
        cmds.append((cur, ""))
    return cmds


def placeholders_in(token: Token) -> list[str]:
    return [*token.live_vars, *_PLACEHOLDER.findall(token.text)]


_SAFE = re.compile(r"[\w@%+=:,./-]+")


def quote(word: str, live_vars: tuple[str, ...] = ()) -> str:
    """shlex.quote, except `~/` stays expandable and live `$VARS` stay live (double quotes)."""
    if word == "":
        return "''"
    if _SAFE.fullmatch(word):
        return word
    if word.startswith("~/") and _SAFE.fullmatch(word[2:]):
        return word
    if live_vars and all(v in word for v in live_vars):
        body = re.sub(r'(["\\`])', r"\\\1", word)
        # `$` that is not one of the live variables must not expand.
        spans = [(m.start(), m.end()) for lv in live_vars for m in re.finditer(re.escape(lv), body)]
        chars = []
        for idx, ch in enumerate(body):
            if ch == "$" and not any(s == idx for s, _ in spans):
                chars.append("\\$")
            else:
                chars.append(ch)
        return '"' + "".join(chars) + '"'
    if "'" in word and not re.search(r'["\\$`]', word):
        return '"' + word + '"'
    return "'" + word.replace("'", "'\"'\"'") + "'"
