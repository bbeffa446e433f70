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
import operator
from typing import Mapping

import numpy as np
import pandas as pd

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
from slicelang import literal_text, name_text

ExpressionError.__module__ = __name__  # users see domains.expressions.ExpressionError

__all__ = [
    "COLUMN_TYPES", "ExpressionError", "Problem", "Token", "Node", "Operand", "Column", "Literal",
    "Abs", "Compare", "InList", "IsMissing", "Between", "Truthy", "And", "Or", "Not",
    "tokenize", "parse", "validate", "check", "evaluate", "columns_used", "count_terms", "literals_by_column",
    "to_text",
]

COLUMN_TYPES = ("numeric", "categorical", "boolean")
_ORDERING = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EQUALITY = {"==": operator.eq, "!=": operator.ne}
_TRUE_STRINGS = {"true", "t", "yes", "y", "1"}
_FALSE_STRINGS = {"false", "f", "no", "n", "0"}


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


# ---------------------------------------------------------------- evaluation

def _as_bool(series: pd.Series) -> pd.Series:
    """Booleans stored as bool, 0/1 or 'true'/'false' strings -> True/False/NaN."""
    if series.dtype == bool:
        return series
    def convert(v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1):
            return bool(v)
        if isinstance(v, str) and v.strip().lower() in _TRUE_STRINGS | _FALSE_STRINGS:
            return v.strip().lower() in _TRUE_STRINGS
        return np.nan
    return series.map(convert)


def _value(operand, df: pd.DataFrame):
    if isinstance(operand, Literal):
        return operand.value
    if isinstance(operand, Abs):
        inner = _value(operand.operand, df)
        try:
            return inner.abs() if isinstance(inner, pd.Series) else abs(inner)
        except TypeError:
            raise ExpressionError(Problem("abs() of a non-numeric column", operand.position)) from None
    if operand.name not in df.columns:
        raise ExpressionError(Problem(f"column {operand.name!r} is not in the data", operand.position))
    return df[operand.name]


def _known(value, n: int) -> np.ndarray:
    if isinstance(value, pd.Series):
        return value.notna().to_numpy()
    return np.ones(n, dtype=bool)


def _to_array(result, n: int) -> np.ndarray:
    if isinstance(result, pd.Series):
        return result.fillna(False).to_numpy(dtype=bool)
    return np.full(n, bool(result))


def _compare(node: Compare, df: pd.DataFrame) -> np.ndarray:
    n = len(df)
    left, right = _value(node.left, df), _value(node.right, df)
    if isinstance(node.left, Literal) and isinstance(node.left.value, bool) and isinstance(right, pd.Series):
        right = _as_bool(right)
    if isinstance(node.right, Literal) and isinstance(node.right.value, bool) and isinstance(left, pd.Series):
        left = _as_bool(left)
    op = {**_ORDERING, **_EQUALITY}[node.op]
    if node.op in _EQUALITY and isinstance(left, pd.Series) and left.dtype == object and isinstance(right, str):
        # a text column against a text literal: numpy's element-wise == on the values gives the
        # same booleans as the Series comparison at a third of its cost (slice masks of 1 M rows);
        # a missing value never equals text, so only != needs the missing rows taken out
        try:
            result = op(left.to_numpy(), right)
            return result if node.op == "==" else result & _known(left, n)
        except TypeError:  # pd.NA among the values has no truth value: the Series comparison handles it
            pass
    known = _known(left, n) & _known(right, n)
    try:
        result = op(left, right)
    except TypeError as err:
        raise ExpressionError(Problem(f"cannot evaluate {node.op!r}: {err}", node.position)) from None
    return _to_array(result, n) & known


def _in_list(node: InList, df: pd.DataFrame) -> np.ndarray:
    series = _value(node.operand, df)
    values = [v.value for v in node.values]
    if any(isinstance(v, bool) for v in values):
        series = _as_bool(series)
    known = _known(series, len(df))
    hit = series.isin(values).to_numpy(dtype=bool)
    return (~hit if node.negated else hit) & known


def _eval(node, df: pd.DataFrame) -> np.ndarray:
    n = len(df)
    if isinstance(node, And):
        return np.logical_and.reduce([_eval(p, df) for p in node.parts])
    if isinstance(node, Or):
        return np.logical_or.reduce([_eval(p, df) for p in node.parts])
    if isinstance(node, Not):
        return ~_eval(node.part, df)
    if isinstance(node, Compare):
        return _compare(node, df)
    if isinstance(node, InList):
        return _in_list(node, df)
    if isinstance(node, IsMissing):
        missing = ~_known(_value(node.operand, df), n)
        return ~missing if node.negated else missing
    if isinstance(node, Between):
        low = Compare(">=", node.operand, node.low, node.position)
        high = Compare("<=", node.operand, node.high, node.position)
        return _compare(low, df) & _compare(high, df)
    if isinstance(node, Truthy):
        return _to_array(_as_bool(_value(node.column, df)).eq(True), n)  # NaN -> False
    raise TypeError(f"not an expression node: {node!r}")


def evaluate(node: Node | str, df: pd.DataFrame) -> pd.Series:
    """Evaluate ``node`` (or expression text) over ``df``: a boolean Series aligned with ``df.index``."""
    if isinstance(node, str):
        node = parse(node)
    return pd.Series(_eval(node, df), index=df.index, dtype=bool)


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
