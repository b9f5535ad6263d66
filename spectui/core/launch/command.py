"""SGLang launch commands as users paste them: parse into env + program + flags, edit, diff, render.

Handles leading `VAR=value`, `export X=1 &&`, `env`, `nohup`, `setsid`, `docker run …`, `python -m
sglang.launch_server`, `sglang serve`, `bash -c "…"` and `ssh host '…'` wrappers (each becomes an outer
`Shell` layer), backslash-newline continuations, comments, redirections and a trailing `&`.
render() rebuilds the same structure with shell quoting, so parse(render(c)) == c.

The simulated SGLang (`python -m spectui.sim`, CONTRACTS.md) parses too: it is an entry point with
SGLang's command line. Its own knobs travel in its environment, or as `--sim-*` flags a user typed
(README's example): `sglang_args` leaves those out, so the resolver, the rules and the relaunch verdict
judge only what SGLang's argparse would see; `args` keeps them, so a relaunch starts them again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from spectui.core.launch.shellwords import Token, placeholders_in, quote, split_commands, tokenize
from spectui.errors import CommandParseError

if TYPE_CHECKING:
    from spectui.core.launch.catalogue import FlagCatalogue

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
_PY_OPTS_WITH_ARG = ("-X", "-W")
_SHELLS = ("bash", "sh", "zsh", "dash")
_VAR = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")
_SGLANG_HINT = re.compile(r"sglang[\w.]*launch_server|sglang\s+serve|launch_server\.py|spectui\.sim\b")
SIM_MODULE = "spectui.sim"
_MODULES = ("sglang.launch_server", SIM_MODULE)  # `python -m X` programs that take SGLang's command line


@dataclass(frozen=True, slots=True)
class Shell:
    """An outer layer the launch runs inside: `ssh host '…'`, `nohup bash -c "…" > log 2>&1 &`."""

    prelude: tuple[str, ...]  # commands before it at this level (`cd /x`), rendered text
    words: tuple[str, ...]  # ("ssh", "-o", "ConnectTimeout=10", "root@h") / ("nohup", "bash", "-c")
    redirects: tuple[str, ...]


SIM_KNOB_PREFIX = "--sim-"


def sim_knob_len(words: Sequence[str], i: int) -> int:
    """How many words the simulator's `--sim-*` knob at `i` takes: `--sim-x=V` one, `--sim-x V` two (any
    next word is the value), `--sim-fault crash-after N` three (the count is a word of its own)."""
    name, eq, value = words[i].partition("=")
    n = 1
    if not eq and i + 1 < len(words):
        value, n = words[i + 1], 2
    if name == "--sim-fault" and value == "crash-after" and i + n < len(words) and words[i + n].isdigit():
        n += 1
    return n


def without_sim_knobs(words: Sequence[str]) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(words):
        if words[i].startswith(SIM_KNOB_PREFIX):
            i += sim_knob_len(words, i)
            continue
        out.append(words[i])
        i += 1
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FlagChange:
    flag: str
    old: str | None  # None: absent; "" present without a value (store_true)
    new: str | None


@dataclass(frozen=True, slots=True)
class LaunchCommand:
    env: tuple[tuple[str, str], ...]  # leading VAR=value / export / env assignments, in order
    program: tuple[str, ...]  # ("python3", "-m", "sglang.launch_server") / ("sglang", "serve")
    args: tuple[str, ...]  # what SGLang's argparse sees, verbatim, in order
    wrapper: tuple[str, ...] = ()  # nohup / setsid / docker run … (same level as the program)
    redirects: tuple[str, ...] = ()  # "> log", "2>&1", "&"
    placeholders: tuple[str, ...] = ()  # unexpanded $VARS / <PLACEHOLDERS> found
    prelude: tuple[str, ...] = ()  # commands before it at its level (`cd /work`), rendered text
    outer: tuple[Shell, ...] = ()  # enclosing layers, outermost first

    @property
    def argv(self) -> list[str]:
        return [*self.program, *self.args]

    @property
    def is_simulator(self) -> bool:
        return SIM_MODULE in self.program

    @property
    def sglang_args(self) -> tuple[str, ...]:
        """What SGLang's argparse sees: `args`, without the simulator's own `--sim-*` knobs."""
        return without_sim_knobs(self.args) if self.is_simulator else self.args

    @property
    def entry(self) -> str:
        """"sglang" for the console script, else "launch_server"."""
        return "sglang" if os.path.basename(self.program[0]) == "sglang" else "launch_server"

    def render(self) -> str:
        live = tuple(p for p in self.placeholders if p.startswith("$"))

        def q(word: str) -> str:
            return quote(word, tuple(lv for lv in live if lv in word))

        words = [f"{k}={q(v)}" for k, v in self.env]
        words += [q(w) for w in (*self.wrapper, *self.program, *self.args)]
        words += [_render_redirect(r, q) for r in self.redirects]
        text = " && ".join([*self.prelude, " ".join(words)])
        for layer in reversed(self.outer):
            inner = " ".join([*(q(w) for w in layer.words), quote(text),
                              *(_render_redirect(r, q) for r in layer.redirects)])
            text = " && ".join([*layer.prelude, inner])
        return text


def _render_redirect(r: str, q) -> str:  # type: ignore[no-untyped-def]
    op, _, target = r.partition(" ")
    return f"{op} {q(target)}" if target else op


def parse_command(text: str | Sequence[str]) -> LaunchCommand:
    """Parse a pasted shell command or an argv list. Raises CommandParseError with a one-line message."""
    if not isinstance(text, str):
        words = list(text)
        # Words arrive already split by the user's shell: a `$NAME` still in them was not expanded there,
        # so it stays a live placeholder.
        text = words[0] if len(words) == 1 else " ".join(quote(w, tuple(_VAR.findall(w))) for w in words)
    if not text.strip():
        raise CommandParseError("empty launch command; give the command that starts the SGLang server")
    return _parse_level(text, ())


def _parse_level(text: str, outer: tuple[Shell, ...]) -> LaunchCommand:
    commands = split_commands(tokenize(text))
    if not commands:
        raise CommandParseError("empty launch command (only comments?); give the SGLang launch command")
    env: list[tuple[str, str]] = []
    prelude: list[str] = []
    nested: tuple[int, int] | None = None
    for ci, (toks, sep) in enumerate(commands):
        words = [t for t in toks if t.kind == "word"]
        if words and words[0].text == "export":
            env += [_split_assign(t) for t in words[1:] if t.is_assignment]
            continue
        found = _find_program(words)
        if found is not None:
            return _build(toks, sep, found, env, prelude, outer)
        if nested is None:
            for wi, t in enumerate(words):
                if wi > 0 and _SGLANG_HINT.search(t.text) and (" " in t.text or "\n" in t.text):
                    nested = (ci, wi)
                    break
        if nested is not None and nested[0] == ci:
            toks_words = words
            layer = Shell(tuple(prelude), tuple(w.text for w in toks_words[:nested[1]]),
                          _redirects(toks, sep))
            inner = _parse_level(toks_words[nested[1]].text, (*outer, layer))
            return replace(inner, env=(*env, *inner.env)) if env else inner
        prelude.append(_render_tokens(toks))
    first = next((t.text for toks, _ in commands for t in toks if t.kind == "word"), "")
    raise CommandParseError(
        f"not an SGLang launch command (starts with {first!r}); expected `python -m sglang.launch_server …`, "
        "`sglang serve …` or the simulator `python -m spectui.sim …`"
    )


def _find_program(words: list[Token]) -> tuple[int, int] | None:
    """(start, end) of the program words: `python3 [-u] -m sglang.launch_server`, `sglang serve`, …"""
    for i, t in enumerate(words):
        base = os.path.basename(t.text)
        nxt = words[i + 1].text if i + 1 < len(words) else ""
        if base == "sglang" and nxt == "serve":
            return i, i + 2
        if base.endswith("launch_server.py") and not _PYTHON.fullmatch(base):
            return i, i + 1
        if _PYTHON.fullmatch(base):
            j = i + 1
            while j < len(words) and words[j].text.startswith("-") and words[j].text != "-m":
                j += 2 if words[j].text in _PY_OPTS_WITH_ARG else 1
            if j + 1 < len(words) and words[j].text == "-m" and words[j + 1].text in _MODULES:
                return i, j + 2
            if j < len(words) and words[j].text.endswith("launch_server.py"):
                return i, j + 1
    return None


def _split_assign(t: Token) -> tuple[str, str]:
    k, _, val = t.text.partition("=")
    return k, val


def _redirects(toks: list[Token], sep: str) -> tuple[str, ...]:
    out: list[str] = []
    for i, t in enumerate(toks):
        if t.kind != "redirect":
            continue
        needs_target = not re.search(r"&\d*-?$", t.text) or t.text.endswith(("&>", "&>>"))
        if needs_target and i + 1 < len(toks) and toks[i + 1].kind == "word":
            out.append(f"{t.text} {toks[i + 1].text}")
        else:
            out.append(t.text)
    if sep == "&":
        out.append("&")
    return tuple(out)


def _words_without_redirect_targets(toks: list[Token]) -> list[Token]:
    words: list[Token] = []
    skip = False
    for t in toks:
        if skip:
            skip = False
            continue
        if t.kind == "redirect":
            skip = not re.search(r"&\d*-?$", t.text) or t.text.endswith(("&>", "&>>"))
            continue
        words.append(t)
    return words


def _build(toks: list[Token], sep: str, found: tuple[int, int], env: list[tuple[str, str]],
           prelude: list[str], outer: tuple[Shell, ...]) -> LaunchCommand:
    words = _words_without_redirect_targets(toks)
    start, end = _find_program(words) or found
    env = list(env)
    wrapper: list[str] = []
    after_env = False
    for i, t in enumerate(words[:start]):
        prev = words[i - 1].text if i else ""
        if t.is_assignment and (not wrapper or after_env) and prev not in ("-e", "--env"):
            env.append(_split_assign(t))
            continue
        wrapper.append(t.text)
        # `env [-i] [-u NAME] A=1 prog`: assignments after env's options are environment too.
        after_env = t.text == "env" or (after_env and (t.text.startswith("-") or prev in ("-u", "--unset")))
    placeholders: list[str] = []
    for t in words:
        for p in placeholders_in(t):
            if p not in placeholders:
                placeholders.append(p)
    return LaunchCommand(
        env=tuple(env), program=tuple(t.text for t in words[start:end]),
        args=tuple(t.text for t in words[end:]), wrapper=tuple(wrapper), redirects=_redirects(toks, sep),
        placeholders=tuple(placeholders), prelude=tuple(prelude), outer=outer,
    )


def _render_tokens(toks: list[Token]) -> str:
    return " ".join(quote(t.text, t.live_vars) if t.kind == "word" else t.text for t in toks)


# --- editing --------------------------------------------------------------------------------------

def _norm(flag: str) -> str:
    return "--" + flag.lstrip("-")


def _same_flag(token: str, flag: str, cat: FlagCatalogue | None) -> bool:
    name = token.split("=", 1)[0]
    if name == flag:
        return True
    if cat is None:
        return False
    a, b = cat.spec_for(name), cat.spec_for(flag)
    return a is not None and b is not None and a.dest == b.dest


def _value_count(args: Sequence[str], i: int, cat: FlagCatalogue | None) -> int:
    if "=" in args[i]:
        return 0
    spec = cat.spec_for(args[i]) if cat else None
    if spec is not None:
        if spec.nargs == 0:
            return 0
        if spec.nargs in ("+", "*"):
            n = 0
            while i + 1 + n < len(args) and not args[i + 1 + n].startswith("--"):
                n += 1
            return n
        return 1 if i + 1 < len(args) else 0
    return 1 if i + 1 < len(args) and not args[i + 1].startswith("-") else 0


def _occurrences(args: Sequence[str], flag: str, cat: FlagCatalogue | None) -> list[tuple[int, int]]:
    out = []
    i = 0
    while i < len(args):
        if args[i].startswith("--") and _same_flag(args[i], flag, cat):
            n = _value_count(args, i, cat)
            out.append((i, 1 + n))
            i += 1 + n
        else:
            i += 1
    return out


def set_flag(cmd: LaunchCommand, flag: str, value: str | None,
             catalogue: FlagCatalogue | None = None) -> LaunchCommand:
    """Set a flag (full name written); replaces every occurrence, including prefix/alias forms."""
    name = _norm(flag)
    if catalogue is not None and (canon := catalogue.spec_for(name)) is not None and name not in canon.flags:
        name = canon.name
    new = [name] if value is None else [name, value]
    args = list(cmd.args)
    occ = _occurrences(args, name, catalogue)
    if not occ:
        return replace(cmd, args=(*args, *new))
    first = occ[0][0]
    for i, n in reversed(occ):
        del args[i:i + n]
    args[first:first] = new
    return replace(cmd, args=tuple(args))


def unset_flag(cmd: LaunchCommand, flag: str, catalogue: FlagCatalogue | None = None) -> LaunchCommand:
    args = list(cmd.args)
    for i, n in reversed(_occurrences(args, _norm(flag), catalogue)):
        del args[i:i + n]
    return replace(cmd, args=tuple(args))


def flag_values(cmd: LaunchCommand, catalogue: FlagCatalogue | None = None) -> dict[str, str]:
    """flag -> value as typed (last occurrence wins, like argparse); "" for flags without a value."""
    out: dict[str, str] = {}
    args = cmd.args
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if catalogue is not None and (spec := catalogue.spec_for(name)) is not None:
                name = spec.name
            n = _value_count(args, i, catalogue)
            out.pop(name, None)
            out[name] = " ".join([*([val] if eq else []), *args[i + 1:i + 1 + n]])
            i += 1 + n
        else:
            i += 1
    return out


def diff(old: LaunchCommand, new: LaunchCommand, catalogue: FlagCatalogue | None = None) -> list[FlagChange]:
    """Flag-by-flag changes from `old` to `new` (in the order flags appear)."""
    a, b = flag_values(old, catalogue), flag_values(new, catalogue)
    changes = [FlagChange(f, a[f], b.get(f)) for f in a if a[f] != b.get(f)]
    changes += [FlagChange(f, None, b[f]) for f in b if f not in a]
    return changes
