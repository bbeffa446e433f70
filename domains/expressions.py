"""A small, safe language for slice predicates over context columns.

Grammar (keywords are case-insensitive; ``#`` is not a comment)::

    expr       := or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | "(" expr ")" | predicate
    predicate  := operand (("==" | "!=" | "<" | "<=" | ">" | ">=") operand)+   # chains: 0 <= age < 18
                | operand ["not"] "in" "[" literal ("," literal)* [","] "]"
                | operand "is" ["not"] "missing"
                | operand "between" operand "and" operand              # inclusive both ends
                | column                                                # a boolean column is true
    operand    := column | "abs" "(" operand ")" | literal
    column     := NAME | `any name in backticks`                        # a backtick inside doubled: ``
    literal    := NUMBER | "-" NUMBER | "string" | 'string' | true | false

Ranges: both ``age between 0 and 17`` (inclusive) and chained comparisons
``0 <= age < 18`` are supported; a chain ``a < b < c`` means ``a < b and b < c``.

Missing values: every comparison, ``in``, ``not in`` and ``between`` is **False** on a
missing value (so ``age < 18`` and ``age >= 18`` both exclude rows without an age);
``is missing`` / ``is not missing`` test for it explicitly. ``not`` is plain boolean
negation, so ``not (age < 18)`` *includes* missing ages.

Nothing is ever passed to ``eval``: text is tokenised, parsed by recursive descent into
frozen dataclasses, and evaluated with vectorised pandas operations.

>>> import pandas as pd
>>> df = pd.DataFrame({"fitzpatrick": [1, 5, 6, None],
...                    "modality": ["clinical", "smartphone", "smartphone", "smartphone"]})
>>> evaluate(parse('fitzpatrick in [5, 6] and modality == "smartphone"'), df).tolist()
[False, True, True, False]
>>> parse("age >")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
domains.expressions.ExpressionError: expected a column, a literal or abs(...) at position 5
  age >
       ^
"""
from __future__ import annotations

import difflib
from typing import Mapping

from domains._syntax import (
    Abs,
    And,
    Between,
    Column,
    Compare,
    ExpressionError,
    InList,
    IsMissing,
    Literal,
    Node,
    Not,
    Operand,
    Or,
    Problem,
    Token,
    Truthy,
    parse,
    tokenize,
)
from domains.expression_eval import EQUALITY as _EQUALITY, evaluate
from slicelang import literal_text, name_text

ExpressionError.__module__ = __name__  # users see domains.expressions.ExpressionError

__all__ = [
    "COLUMN_TYPES", "ExpressionError", "Problem", "Token", "Node", "Operand", "Column", "Literal",
    "Abs", "Compare", "InList", "IsMissing", "Between", "Truthy", "And", "Or", "Not",
    "tokenize", "parse", "validate", "check", "evaluate", "columns_used", "count_terms", "literals_by_column",
    "to_text",
]

COLUMN_TYPES = ("numeric", "categorical", "boolean")


def _children(node) -> tuple:
    if isinstance(node, (And, Or)):
        return node.parts
    if isinstance(node, Not):
        return (node.part,)
    if isinstance(node, Compare):
        return (node.left, node.right)
    if isinstance(node, InList):
        return (node.operand, *node.values)
    if isinstance(node, IsMissing):
        return (node.operand,)
    if isinstance(node, Between):
        return (node.operand, node.low, node.high)
    if isinstance(node, Truthy):
        return (node.column,)
    if isinstance(node, Abs):
        return (node.operand,)
    return ()


def _walk(node):
    yield node
    for child in _children(node):
        yield from _walk(child)


_TERMS = (Compare, InList, IsMissing, Between, Truthy)


def count_terms(node: Node) -> int:
    """How many predicates (comparisons, ``in``, ``is missing``, ``between``, boolean columns)
    ``node`` combines: what an audit evaluates per slice, so what a limit on expressions counts."""
    return sum(1 for n in _walk(node) if isinstance(n, _TERMS))


def columns_used(node: Node) -> tuple[str, ...]:
    """Column names referenced by ``node``, in first-use order, without duplicates."""
    return tuple(dict.fromkeys(n.name for n in _walk(node) if isinstance(n, Column)))


def literals_by_column(node: Node) -> dict[str, tuple]:
    """Literal values each bare column is compared with by ==, !=, in, not in.

    Lets a pack check that slice values exist among a column's allowed values.
    """
    found: dict[str, list] = {}
    for n in _walk(node):
        if isinstance(n, Compare) and n.op in _EQUALITY:
            for col, lit in ((n.left, n.right), (n.right, n.left)):
                if isinstance(col, Column) and isinstance(lit, Literal):
                    found.setdefault(col.name, []).append(lit.value)
        elif isinstance(n, InList) and isinstance(n.operand, Column):
            found.setdefault(n.operand.name, []).extend(v.value for v in n.values)
    return {k: tuple(dict.fromkeys(v)) for k, v in found.items()}


# ---------------------------------------------------------------- validation

def _literal_type(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    return "numeric" if isinstance(value, (int, float)) else "string"


def _describe(operand, kind: str) -> str:
    if isinstance(operand, Literal):
        return f"{kind} literal {operand.value!r}"
    if isinstance(operand, Abs):
        return "abs(...)"
    return f"{kind} column {operand.name!r}"


class _Validator:
    def __init__(self, columns: Mapping[str, str]):
        bad = {k: v for k, v in columns.items() if v not in COLUMN_TYPES}
        if bad:
            raise ValueError(f"column types must be one of {COLUMN_TYPES}; got {bad}")
        self.columns = dict(columns)
        self.problems: list[Problem] = []

    def problem(self, message: str, position: int) -> None:
        self.problems.append(Problem(message, position))

    def type_of(self, operand) -> str | None:
        """'numeric' | 'categorical' | 'boolean' | 'string' (literal) | None (unknown column)."""
        if isinstance(operand, Literal):
            return _literal_type(operand.value)
        if isinstance(operand, Abs):
            inner = self.type_of(operand.operand)
            if inner not in (None, "numeric"):
                self.problem(f"abs() needs a numeric value, not {_describe(operand.operand, inner)}",
                             operand.position)
            return "numeric"
        if operand.name not in self.columns:
            close = difflib.get_close_matches(operand.name, list(self.columns), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self.columns)) or "none declared"
            self.problem(f"unknown column {operand.name!r}{hint} (known columns: {known})", operand.position)
            return None
        return self.columns[operand.name]

    def equality(self, a, ta: str | None, b, tb: str | None, position: int) -> None:
        if ta is None or tb is None:
            return
        ok = {("numeric", "numeric"), ("boolean", "boolean"), ("categorical", "string"),
              ("categorical", "numeric"), ("categorical", "categorical"), ("string", "string")}
        if (ta, tb) not in ok and (tb, ta) not in ok:
            self.problem(f"cannot compare {_describe(a, ta)} with {_describe(b, tb)}", position)

    def visit(self, node) -> None:
        if isinstance(node, (And, Or)):
            for part in node.parts:
                self.visit(part)
        elif isinstance(node, Not):
            self.visit(node.part)
        elif isinstance(node, Compare):
            self.compare(node)
        elif isinstance(node, InList):
            self.needs_column(node.operand, node.position)
            t = self.type_of(node.operand)
            for lit in node.values:
                self.equality(node.operand, t, lit, _literal_type(lit.value), lit.position)
        elif isinstance(node, IsMissing):
            self.needs_column(node.operand, node.position)
            self.type_of(node.operand)
        elif isinstance(node, Between):
            self.needs_column(node.operand, node.position)
            for operand in (node.operand, node.low, node.high):
                t = self.type_of(operand)
                if t not in (None, "numeric"):
                    self.problem(f"'between' needs numeric values, not {_describe(operand, t)}", node.position)
        elif isinstance(node, Truthy):
            t = self.type_of(node.column)
            if t not in (None, "boolean"):
                self.problem(f"{_describe(node.column, t)} is not boolean; compare it, e.g. "
                             f"{name_text(node.column.name)} == ...", node.position)

    def needs_column(self, operand, position: int) -> None:
        if isinstance(operand, Literal):
            self.problem("the left-hand side must be a column or abs(column), not a literal", position)

    def compare(self, node: Compare) -> None:
        if isinstance(node.left, Literal) and isinstance(node.right, Literal):
            self.problem("comparison of two literals; one side must be a column", node.position)
            return
        tl, tr = self.type_of(node.left), self.type_of(node.right)
        if node.op in _EQUALITY:
            self.equality(node.left, tl, node.right, tr, node.position)
            return
        # one message per comparison: name the column if a column is at fault, else the literal
        bad = [(o, t) for o, t in ((node.left, tl), (node.right, tr)) if t not in (None, "numeric")]
        bad.sort(key=lambda ot: isinstance(ot[0], Literal))
        if bad:
            operand, t = bad[0]
            self.problem(f"cannot order {_describe(operand, t)} with {node.op!r}; "
                         f"only numeric values can be ordered", node.position)


def validate(node: Node, columns: Mapping[str, str], *, text: str = "") -> None:
    """Check ``node`` against declared ``columns`` (name -> numeric|categorical|boolean).

    Raises :class:`ExpressionError` listing every unknown column (with a "did you mean"
    suggestion) and type error (e.g. a string ordered with ``<``) with its position;
    pass the source ``text`` to get caret-style messages.
    """
    v = _Validator(columns)
    v.visit(node)
    if v.problems:
        raise ExpressionError(v.problems, text)


def check(text: str, columns: Mapping[str, str]) -> Node:
    """Parse and validate in one go; return the AST."""
    node = parse(text)
    validate(node, columns, text=text)
    return node


# ---------------------------------------------------------------- printing

def _operand_text(operand) -> str:
    if isinstance(operand, Literal):
        return literal_text(operand.value)
    if isinstance(operand, Abs):
        return f"abs({_operand_text(operand.operand)})"
    return name_text(operand.name)


def to_text(node: Node) -> str:
    """Canonical text of ``node``; ``parse(to_text(n))`` gives the same tree (positions aside)."""
    if isinstance(node, (And, Or)):
        word = " and " if isinstance(node, And) else " or "
        return word.join(f"({to_text(p)})" if isinstance(p, (And, Or)) else to_text(p) for p in node.parts)
    if isinstance(node, Not):
        inner = to_text(node.part)
        return f"not ({inner})" if isinstance(node.part, (And, Or)) else f"not {inner}"
    if isinstance(node, Compare):
        return f"{_operand_text(node.left)} {node.op} {_operand_text(node.right)}"
    if isinstance(node, InList):
        values = ", ".join(_operand_text(v) for v in node.values)
        return f"{_operand_text(node.operand)} {'not in' if node.negated else 'in'} [{values}]"
    if isinstance(node, IsMissing):
        return f"{_operand_text(node.operand)} is {'not ' if node.negated else ''}missing"
    if isinstance(node, Between):
        return f"{_operand_text(node.operand)} between {_operand_text(node.low)} and {_operand_text(node.high)}"
    if isinstance(node, Truthy):
        return _operand_text(node.column)
    raise TypeError(f"not an expression node: {node!r}")
