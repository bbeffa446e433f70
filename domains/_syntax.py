"""Tokens, AST and recursive-descent parser of the slice language (see :mod:`domains.expressions`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NoReturn, Union

from slicelang import COMPARATORS as _COMPARATORS, KEYWORDS as _KEYWORDS

__all__ = [
    "ExpressionError", "Problem", "Token", "Node", "Operand", "Column", "Literal", "Abs", "Compare",
    "InList", "IsMissing", "Between", "Truthy", "And", "Or", "Not", "tokenize", "parse",
]

# nesting of (...), not and abs(...): the parser recurses once per level (and every AST walk
# after it), so the depth is checked rather than left to Python's recursion limit
MAX_DEPTH = 64


@dataclass(frozen=True)
class Problem:
    """One fault in an expression: a message and the 0-based character position."""

    message: str
    position: int


class ExpressionError(ValueError):
    """A slice expression that cannot be parsed or does not fit the declared columns.

    ``position`` is the 0-based character offset of the (first) fault; ``problems`` lists
    every fault found; ``str(err)`` shows each with a caret under the expression.
    """

    def __init__(self, problems: list[Problem] | Problem, text: str = ""):
        self.problems = tuple(problems) if isinstance(problems, list) else (problems,)
        self.position = self.problems[0].position
        self.text = text
        super().__init__("\n".join(_caret(p, text) for p in self.problems))


def _caret(problem: Problem, text: str) -> str:
    if not text:
        return f"{problem.message} at position {problem.position}"
    return f"{problem.message} at position {problem.position}\n  {text}\n  {' ' * problem.position}^"


# ---------------------------------------------------------------- tokens

@dataclass(frozen=True)
class Token:
    kind: str  # NAME, NUMBER, STRING, OP, KEYWORD, END
    value: Any
    position: int


_TOKEN_RE = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|-)
""", re.VERBOSE)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens; anything outside the grammar is an :class:`ExpressionError`."""
    if not isinstance(text, str):
        raise ExpressionError(Problem("an expression must be a string", 0))
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            hint = " (did you mean '==')" if text[pos] == "=" else ""
            raise ExpressionError(Problem(f"unexpected character {text[pos]!r}{hint}", pos), text)
        kind = m.lastgroup
        raw = m.group()
        if kind == "number":
            tokens.append(Token("NUMBER", float(raw) if any(c in raw for c in ".eE") else int(raw), pos))
        elif kind == "string":
            tokens.append(Token("STRING", re.sub(r"\\(.)", r"\1", raw[1:-1]), pos))
        elif kind == "quoted":
            tokens.append(Token("NAME", raw[1:-1].replace("``", "`"), pos))  # a doubled backtick is one
        elif kind == "name":
            low = raw.lower()
            tokens.append(Token("KEYWORD", low, pos) if low in _KEYWORDS else Token("NAME", raw, pos))
        elif kind == "op":
            tokens.append(Token("OP", raw, pos))
        pos = m.end()
    tokens.append(Token("END", None, len(text)))
    return tokens


# ---------------------------------------------------------------- AST

@dataclass(frozen=True)
class Column:
    name: str
    position: int


@dataclass(frozen=True)
class Literal:
    value: Union[str, int, float, bool]
    position: int


@dataclass(frozen=True)
class Abs:
    operand: "Operand"
    position: int


Operand = Union[Column, Literal, Abs]


@dataclass(frozen=True)
class Compare:
    op: str
    left: Operand
    right: Operand
    position: int


@dataclass(frozen=True)
class InList:
    operand: Operand
    values: tuple[Literal, ...]
    negated: bool
    position: int


@dataclass(frozen=True)
class IsMissing:
    operand: Operand
    negated: bool
    position: int


@dataclass(frozen=True)
class Between:
    operand: Operand
    low: Operand
    high: Operand
    position: int


@dataclass(frozen=True)
class Truthy:
    column: Column
    position: int


@dataclass(frozen=True)
class And:
    parts: tuple["Node", ...]
    position: int


@dataclass(frozen=True)
class Or:
    parts: tuple["Node", ...]
    position: int


@dataclass(frozen=True)
class Not:
    part: "Node"
    position: int


Node = Union[Compare, InList, IsMissing, Between, Truthy, And, Or, Not]


# ---------------------------------------------------------------- parser

class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    def nest(self, token: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} levels deep (parentheses, not, abs)", token)

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def fail(self, message: str, token: Token | None = None) -> NoReturn:
        token = token or self.tok
        raise ExpressionError(Problem(message, token.position), self.text)

    def describe(self, token: Token) -> str:
        return "end of expression" if token.kind == "END" else f"{token.value!r}"

    def accept(self, kind: str, value=None) -> Token | None:
        t = self.tok
        if t.kind == kind and (value is None or t.value == value):
            self.i += 1
            return t
        return None

    def expect(self, kind: str, value, what: str) -> Token:
        t = self.accept(kind, value)
        if t is None:
            self.fail(f"expected {what}, found {self.describe(self.tok)}")
        return t

    def parse(self) -> Node:
        if self.tok.kind == "END":
            self.fail("empty expression")
        node = self.or_expr()
        if self.tok.kind != "END":
            self.fail(f"unexpected {self.describe(self.tok)}; expected 'and', 'or' or end of expression")
        return node

    def or_expr(self) -> Node:
        start = self.tok.position
        parts = [self.and_expr()]
        while self.accept("KEYWORD", "or"):
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else Or(tuple(parts), start)

    def and_expr(self) -> Node:
        start = self.tok.position
        parts = [self.not_expr()]
        while self.accept("KEYWORD", "and"):
            parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else And(tuple(parts), start)

    def not_expr(self) -> Node:
        t = self.accept("KEYWORD", "not")
        if t:
            self.nest(t)
            node: Node = Not(self.not_expr(), t.position)
            self.depth -= 1
            return node
        t = self.accept("OP", "(")
        if t:
            self.nest(t)
            node = self.or_expr()
            self.expect("OP", ")", "')'")
            self.depth -= 1
            return node
        return self.predicate()

    def predicate(self) -> Node:
        start = self.tok
        left = self.operand()
        t = self.tok
        if t.kind == "OP" and t.value in _COMPARATORS:
            return self.comparison_chain(left)
        if self.accept("KEYWORD", "in"):
            return InList(left, self.literal_list(), False, t.position)
        if t.kind == "KEYWORD" and t.value == "not" and self.tokens[self.i + 1].value == "in":
            self.i += 2
            return InList(left, self.literal_list(), True, t.position)
        if self.accept("KEYWORD", "is"):
            negated = self.accept("KEYWORD", "not") is not None
            self.expect("KEYWORD", "missing", "'missing' after 'is'" + (" not" if negated else ""))
            return IsMissing(left, negated, t.position)
        if self.accept("KEYWORD", "between"):
            low = self.operand()
            self.expect("KEYWORD", "and", "'and' in 'between ... and ...'")
            return Between(left, low, self.operand(), t.position)
        if isinstance(left, Column) and (t.kind == "END" or t.value in ("and", "or", ")")):
            return Truthy(left, start.position)
        self.fail(f"expected a comparison (==, !=, <, <=, >, >=, in, not in, is missing, between) "
                  f"after {self.text[start.position:t.position].strip()!r}, found {self.describe(t)}")

    def comparison_chain(self, left: Operand) -> Node:
        parts = []
        while self.tok.kind == "OP" and self.tok.value in _COMPARATORS:
            op_tok = self.tok
            self.i += 1
            right = self.operand()
            parts.append(Compare(op_tok.value, left, right, op_tok.position))
            left = right
        return parts[0] if len(parts) == 1 else And(tuple(parts), parts[0].position)

    def operand(self) -> Operand:
        t = self.tok
        if t.kind == "NAME":
            self.i += 1
            return Column(t.value, t.position)
        if self.accept("KEYWORD", "abs"):
            self.nest(t)
            self.expect("OP", "(", "'(' after abs")
            inner = self.operand()
            self.expect("OP", ")", "')' to close abs(")
            self.depth -= 1
            return Abs(inner, t.position)
        return self.literal("a column, a literal or abs(...)")

    def literal(self, what: str = "a literal") -> Literal:
        t = self.tok
        if t.kind in ("NUMBER", "STRING"):
            self.i += 1
            return Literal(t.value, t.position)
        if t.kind == "KEYWORD" and t.value in ("true", "false"):
            self.i += 1
            return Literal(t.value == "true", t.position)
        if t.kind == "OP" and t.value == "-" and self.tokens[self.i + 1].kind == "NUMBER":
            self.i += 2
            return Literal(-self.tokens[self.i - 1].value, t.position)
        self.fail(f"expected {what}, found {self.describe(t)}" if t.kind != "END" else f"expected {what}")

    def literal_list(self) -> tuple[Literal, ...]:
        self.expect("OP", "[", "'[' to start a list of values")
        values = [self.literal("a literal value in the list")]
        while self.accept("OP", ","):
            if self.tok.kind == "OP" and self.tok.value == "]":
                break
            values.append(self.literal("a literal value in the list"))
        self.expect("OP", "]", "']' or ',' in the list")
        return tuple(values)


def parse(text: str) -> Node:
    """Parse ``text`` into an AST; raise :class:`ExpressionError` naming the position of the fault."""
    return _Parser(text).parse()
