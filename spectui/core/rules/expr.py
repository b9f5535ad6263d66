"""The tiny expression language rules use for conditions and computed fix values (never `eval`).

Grammar: numbers, 'strings', true/false/none, dotted names from a fixed vocabulary, + - * / (also × ÷),
comparisons (== != < <= > >=), and/or/not, parentheses, and the functions min, max, round, int, float,
contains(text, part), upper(text), defined(x) (false when x has no value) and if(cond, a, b) (an undefined cond
counts as false; only the branch taken is evaluated). Names are checked when a rule loads; at run time a name with no value makes the
whole expression undefined (a condition is then false, a fix value is not offered).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A name is `word` or `prefix.word`; `env.` names keep their case (environment variables).
_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
    r"|(?P<op>==|!=|<=|>=|//|[-+*/×÷<>(),]))"
)
_KEYWORDS = {"and", "or", "not", "true", "false", "none"}
FUNCTIONS: dict[str, tuple[int, int]] = {  # name -> (min args, max args)
    "min": (1, 8), "max": (1, 8), "round": (1, 2), "int": (1, 1), "float": (1, 1), "contains": (2, 2),
    "defined": (1, 1), "if": (3, 3), "upper": (1, 1),
}


class ExprError(ValueError):
    """A rule expression that does not parse or names something outside the vocabulary."""


class Undefined(Exception):
    """Raised during evaluation when a name has no value (flag not given, metric not seen yet)."""


@dataclass(frozen=True, slots=True)
class Expr:
    """A parsed expression: the source text, the AST (nested tuples) and every name it reads."""

    source: str
    ast: tuple[Any, ...]
    names: frozenset[str]

    def evaluate(self, env: Callable[[str], Any]) -> Any:
        """Evaluate with `env(name)` supplying values; raises Undefined when a name has none."""
        return _eval(self.ast, env)

    def try_evaluate(self, env: Callable[[str], Any]) -> tuple[bool, Any]:
        try:
            return True, _eval(self.ast, env)
        except (Undefined, ArithmeticError, TypeError, ValueError):
            return False, None


def parse(source: str, vocabulary: Callable[[str], bool]) -> Expr:
    """Parse `source`; every name must satisfy `vocabulary(name)`, else ExprError."""
    tokens = _tokenize(source)
    parser = _Parser(tokens, source)
    ast = parser.expr()
    if parser.pos != len(tokens):
        raise ExprError(f"unexpected {tokens[parser.pos][1]!r} in {source!r}")
    names = frozenset(_names(ast))
    bad = sorted(n for n in names if not vocabulary(n))
    if bad:
        raise ExprError(f"unknown name {bad[0]!r} in {source!r}")
    return Expr(source, ast, names)


def _tokenize(source: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = source.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExprError(f"cannot read {text[pos:pos + 12]!r} in {source!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "name" and value in _KEYWORDS:
            kind = "kw"
        tokens.append((kind, value))
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], source: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.source = source

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, value: str | None = None) -> tuple[str, str]:
        tok = self._peek()
        if tok is None or (value is not None and tok[1] != value):
            want = repr(value) if value else "a value"
            raise ExprError(f"expected {want} in {self.source!r}")
        self.pos += 1
        return tok

    def _at(self, *values: str) -> bool:
        tok = self._peek()
        return tok is not None and tok[0] in ("op", "kw") and tok[1] in values

    def expr(self) -> tuple[Any, ...]:
        left = self._and()
        while self._at("or"):
            self._take()
            left = ("or", left, self._and())
        return left

    def _and(self) -> tuple[Any, ...]:
        left = self._not()
        while self._at("and"):
            self._take()
            left = ("and", left, self._not())
        return left

    def _not(self) -> tuple[Any, ...]:
        if self._at("not"):
            self._take()
            return ("not", self._not())
        return self._cmp()

    def _cmp(self) -> tuple[Any, ...]:
        left = self._sum()
        if self._at("==", "!=", "<", "<=", ">", ">="):
            op = self._take()[1]
            left = ("cmp", op, left, self._sum())
        return left

    def _sum(self) -> tuple[Any, ...]:
        left = self._term()
        while self._at("+", "-"):
            op = self._take()[1]
            left = ("bin", op, left, self._term())
        return left

    def _term(self) -> tuple[Any, ...]:
        left = self._unary()
        while self._at("*", "/", "//", "×", "÷"):
            op = {"×": "*", "÷": "/"}.get(self._take()[1], self.tokens[self.pos - 1][1])
            left = ("bin", op, left, self._unary())
        return left

    def _unary(self) -> tuple[Any, ...]:
        if self._at("-"):
            self._take()
            return ("neg", self._unary())
        return self._atom()

    def _atom(self) -> tuple[Any, ...]:
        kind, value = self._take()
        if kind == "num":
            return ("lit", float(value) if "." in value else int(value))
        if kind == "str":
            return ("lit", value[1:-1])
        if kind == "kw" and value in ("true", "false", "none"):
            return ("lit", {"true": True, "false": False, "none": None}[value])
        if kind == "op" and value == "(":
            inner = self.expr()
            self._take(")")
            return inner
        if kind == "name":
            if self._at("("):
                if value not in FUNCTIONS:
                    raise ExprError(f"unknown function {value!r} in {self.source!r}")
                self._take("(")
                args = [self.expr()]
                while self._at(","):
                    self._take()
                    args.append(self.expr())
                self._take(")")
                lo, hi = FUNCTIONS[value]
                if not lo <= len(args) <= hi:
                    raise ExprError(f"{value}() takes {lo}..{hi} arguments in {self.source!r}")
                return ("call", value, tuple(args))
            return ("name", value)
        raise ExprError(f"unexpected {value!r} in {self.source!r}")


def _names(ast: tuple[Any, ...]) -> Iterator[str]:
    tag = ast[0]
    if tag == "name":
        yield ast[1]
    elif tag == "call":
        for arg in ast[2]:
            yield from _names(arg)
    elif tag in ("bin", "cmp"):
        yield from _names(ast[2])
        yield from _names(ast[3])
    elif tag in ("and", "or"):
        yield from _names(ast[1])
        yield from _names(ast[2])
    elif tag in ("not", "neg"):
        yield from _names(ast[1])


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _num(value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("not a number")
    return value


def _eval(ast: tuple[Any, ...], env: Callable[[str], Any]) -> Any:
    tag = ast[0]
    if tag == "lit":
        return ast[1]
    if tag == "name":
        value = env(ast[1])
        if value is None:
            raise Undefined(ast[1])
        return value
    if tag == "and":
        return bool(_eval(ast[1], env)) and bool(_eval(ast[2], env))
    if tag == "or":
        try:
            if _eval(ast[1], env):
                return True
        except Undefined:
            pass
        return bool(_eval(ast[2], env))
    if tag == "not":
        return not _eval(ast[1], env)
    if tag == "neg":
        return -_num(_eval(ast[1], env))
    if tag == "cmp":
        left, right = _eval(ast[2], env), _eval(ast[3], env)
        if ast[1] in ("<", "<=", ">", ">=") and isinstance(left, str) != isinstance(right, str):
            raise TypeError("cannot order a string and a number")
        return _CMP[ast[1]](left, right)
    if tag == "bin":
        left, right = _eval(ast[2], env), _eval(ast[3], env)
        if ast[1] == "+" and isinstance(left, str) and isinstance(right, str):
            return left + right
        a, b = _num(left), _num(right)
        op = ast[1]
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "//":
            return a // b
        return a / b
    if tag == "call":
        if ast[1] == "defined":
            try:
                _eval(ast[2][0], env)
            except Undefined:
                return False
            return True
        if ast[1] == "if":
            try:
                cond = bool(_eval(ast[2][0], env))
            except Undefined:
                cond = False
            return _eval(ast[2][1] if cond else ast[2][2], env)
        return _call(ast[1], [_eval(arg, env) for arg in ast[2]])
    raise ExprError(f"bad node {tag}")


def _call(name: str, args: list[Any]) -> Any:
    if name == "contains":
        return str(args[1]) in str(args[0])
    if name == "upper":
        return str(args[0]).upper()
    if name == "int":
        return int(float(args[0]))
    if name == "float":
        return float(args[0])
    if name == "round":
        return round(_num(args[0]), int(args[1]) if len(args) > 1 else None)
    nums = [_num(a) for a in args]
    return min(nums) if name == "min" else max(nums)


def render_value(value: Any) -> str:
    """A computed value as a flag argument: 15.0 -> "15", True -> "" (a store_true flag), else str()."""
    if isinstance(value, bool):
        return "" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def lookup(mapping: Mapping[str, Any]) -> Callable[[str], Any]:
    """An env function over a plain dict (missing names are None)."""
    return mapping.get
