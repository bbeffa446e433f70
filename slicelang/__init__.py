"""The one writer of slice-expression text: column names, literals and the conditions the library states.

The slice language itself (grammar, parser, evaluation) is :mod:`domains.expressions`. Its text is
written in several packages that may not import one another (``detectors`` names the slices it
discovers and the contexts it finds untested; ``domains`` prints parsed expressions; ``reports`` and
``service`` write the rows a plan targets), so the lexical rules live here, below all of them, and
import nothing — not even NumPy (NumPy scalars are read through the :mod:`numbers` ABCs and their
``dtype``).

* A column name is written bare when the tokenizer reads it back as that name (ASCII letters, digits
  and ``_``, not starting with a digit, not a keyword in any case); otherwise in backticks, with a
  backtick inside doubled (```` `a``b` ```` is the column ``a`b``).
* A string is double-quoted with ``\\`` and ``"`` escaped; a boolean is ``true``/``false``; an integer
  is its digits; a float that holds an integer (below 2**53, where every integer is exact) is
  written as that integer, any other float as its shortest repr, which reads back as the same float.
  NaN and infinities have no literal: "missing" is ``is missing``.

>>> equals("site", "north")
'site == "north"'
>>> all_of([in_range("age", 18.0, 65), equals("missing", 'say "no"')])
'18 <= age < 65 and `missing` == "say \\\\"no\\\\""'
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["KEYWORDS", "COMPARATORS", "name_text", "literal_text", "compare", "equals", "one_of", "is_missing",
           "in_range", "all_of"]

# the words the tokenizer reads as keywords, whatever their case (domains._syntax tokenizes with this set)
KEYWORDS = frozenset({"and", "or", "not", "in", "is", "missing", "between", "abs", "true", "false"})
COMPARATORS = ("==", "!=", "<=", ">=", "<", ">")
_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXACT_INTEGERS = 2.0 ** 53


def name_text(column: Any) -> str:
    """``column`` as the language reads it back: bare when it can be, else in backticks."""
    name = str(column)
    if not name:
        raise ValueError("an empty column name cannot be written in a slice expression")
    if _BARE_NAME.fullmatch(name) and name.lower() not in KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b"


def literal_text(value: Any) -> str:
    """``value`` as a literal: strings double-quoted, numbers that parse back to the same number."""
    if _is_bool(value):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{number!r} has no literal in a slice expression (a missing value is 'is missing')")
        if number.is_integer() and abs(number) < _EXACT_INTEGERS:
            return str(int(number))
        return repr(number)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def compare(column: Any, op: str, value: Any) -> str:
    """``column <op> value``, ``op`` one of :data:`COMPARATORS`."""
    if op not in COMPARATORS:
        raise ValueError(f"op must be one of {COMPARATORS}, got {op!r}")
    return f"{name_text(column)} {op} {literal_text(value)}"


def equals(column: Any, value: Any) -> str:
    """``column == value``."""
    return compare(column, "==", value)


def one_of(column: Any, values: Iterable[Any]) -> str:
    """``column in [v1, v2, ...]``."""
    values = list(values)
    if not values:
        raise ValueError("'in' needs at least one value")
    return f"{name_text(column)} in [{', '.join(literal_text(v) for v in values)}]"


def is_missing(column: Any, *, negated: bool = False) -> str:
    """``column is missing`` (``negated``: ``column is not missing``)."""
    return f"{name_text(column)} is {'not ' if negated else ''}missing"


def in_range(column: Any, low: Any = None, high: Any = None) -> str:
    """The half-open range ``low <= column < high``; a bound that is None is open (both None: any
    value that is not missing)."""
    if low is None and high is None:
        return is_missing(column, negated=True)
    if low is None:
        return compare(column, "<", high)
    if high is None:
        return compare(column, ">=", low)
    return f"{literal_text(low)} <= {name_text(column)} < {literal_text(high)}"


def all_of(conditions: Iterable[str]) -> str:
    """The conjunction of conditions written by this module (none holds a top-level ``or``)."""
    conditions = list(conditions)
    if not conditions:
        raise ValueError("a conjunction needs at least one condition")
    return " and ".join(conditions)
