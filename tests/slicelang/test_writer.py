"""Every expression the library writes parses back to the rows it was written for.

The property: for any column name (keywords such as ``missing``, ``in``, ``between`` in any case,
spaces, quotes, backticks, non-ASCII letters) and any value (strings with quotes and backslashes,
negative and tiny or huge floats, integers, booleans), the text a writer gives selects, through the
parser and :func:`domains.evaluate`, exactly the rows the condition means — computed here directly
with pandas, without the language.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import slicelang as sl
from audit.pipeline.targets import untested_definition
from detectors.attribution import context_cells
from detectors.context_results import UntestedContext
from detectors.discovery import Condition
from domains import evaluate, parse, to_text

AWKWARD_NAMES = ["missing", "in", "between", "and", "OR", "Not", "is", "abs", "true", "FALSE", "skin tone",
                 "it's", 'say "x"', "a`b", "`", "``x", "été", "年龄", "x-1", "1st", "plain", "_", " "]
names = st.one_of(st.sampled_from(AWKWARD_NAMES), st.text(min_size=1, max_size=6))
AWKWARD_TEXT = ['say "no"', "it's", "back\\slash", "\\", '\\"', "é", "", " ", "line\nbreak", "`", "missing", "a'b\"c"]
texts = st.one_of(st.sampled_from(AWKWARD_TEXT), st.text(max_size=6))
floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([-0.0, 0.5, -2.5, 1e-300, 5e-324, 2.0 ** 53, -(2.0 ** 60), 1e16, 123456.0]))
ints = st.integers(-(2 ** 62), 2 ** 62)
ORDERING = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


@st.composite
def columns(draw):
    """(kind, values): a text, integer, float or boolean column of 1-12 rows, missing values allowed
    except in integer columns (pandas would make them floats)."""
    kind = draw(st.sampled_from(["text", "int", "float", "bool"]))
    value = {"text": texts, "int": ints, "float": floats, "bool": st.booleans()}[kind]
    if kind != "int":
        value = st.one_of(st.none(), value)
    return kind, draw(st.lists(value, min_size=1, max_size=12))


def _series(kind: str, values: list) -> pd.Series:
    if kind == "float":
        return pd.Series([np.nan if v is None else v for v in values], dtype=float)
    if kind == "int":
        return pd.Series(values, dtype=np.int64)
    return pd.Series(values, dtype=bool if kind == "bool" and None not in values else object)


def _value(draw, kind: str, values: list):
    """A value of the column's kind: often one the column holds, so that rows match."""
    present = [v for v in values if v is not None]
    fresh = {"text": texts, "int": ints, "float": floats, "bool": st.booleans()}[kind]
    return draw(st.sampled_from(present)) if present and draw(st.booleans()) else draw(fresh)


@st.composite
def conditions(draw, kind: str, values: list, name: str):
    """A written condition on one column and the rows it means (pandas, not the language)."""
    s = _series(kind, values)
    known = s.notna().to_numpy()
    form = draw(st.sampled_from(["equals", "compare", "one_of", "missing", "range"] if kind in ("int", "float")
                                else ["equals", "one_of", "missing"]))
    if form == "missing":
        negated = draw(st.booleans())
        return sl.is_missing(name, negated=negated), known if negated else ~known
    if form == "one_of":
        chosen = [_value(draw, kind, values) for _ in range(draw(st.integers(1, 3)))]
        return sl.one_of(name, chosen), s.isin(chosen).to_numpy() & known
    if form == "equals":
        v = _value(draw, kind, values)
        return sl.equals(name, v), np.array([x is not None and x == v for x in values]) & known
    numbers = s.to_numpy(float)
    if form == "compare":
        op, v = draw(st.sampled_from(sl.COMPARATORS)), _value(draw, kind, values)
        with np.errstate(invalid="ignore"):
            return sl.compare(name, op, v), ORDERING[op](s, v).to_numpy(bool) & known
    low, high = (_value(draw, kind, values) if draw(st.booleans()) else None for _ in range(2))
    rows = known.copy()
    if low is not None:
        rows &= (s >= low).to_numpy(bool)
    if high is not None:
        rows &= (s < high).to_numpy(bool)
    return sl.in_range(name, low, high), rows & ~np.isnan(numbers)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), picked=st.lists(names, min_size=1, max_size=3, unique=True))
def test_every_written_condition_selects_the_rows_it_means(data, picked):
    n = None
    frame, parts, expected = {}, [], []
    for name in picked:
        kind, values = data.draw(columns())
        values = (values * 12)[: n or len(values)]  # one length for every column of the frame
        n = len(values)
        frame[name] = _series(kind, values)
        text, rows = data.draw(conditions(kind, values, name))
        parts.append(text)
        expected.append(rows)
    df = pd.DataFrame(frame)
    text = sl.all_of(parts)
    assert evaluate(text, df).to_numpy().tolist() == np.logical_and.reduce(expected).tolist(), text
    again = to_text(parse(text))  # the AST printer writes through the same rules
    assert evaluate(again, df).to_numpy().tolist() == evaluate(text, df).to_numpy().tolist()


@given(name=names)
def test_a_name_reads_back_as_itself(name):
    assert parse(f"{sl.name_text(name)} is missing").operand.name == name


@given(value=st.one_of(texts, ints, floats, st.booleans()))
def test_a_literal_reads_back_as_the_same_value(value):
    read = parse(f"x == {sl.literal_text(value)}").right.value
    assert read == value and isinstance(read, bool) == isinstance(value, bool)
    if isinstance(value, float):
        assert math.copysign(1, read) == math.copysign(1, value) or value == 0


@pytest.mark.parametrize("value", [np.int64(-3), np.float32(0.25), np.float64(-7.0), np.bool_(True), np.str_("a")])
def test_numpy_scalars_are_written_as_their_values(value):
    assert parse(f"x == {sl.literal_text(value)}").right.value == value.item()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_values_without_a_literal_are_refused(bad):
    with pytest.raises(ValueError, match="no literal"):
        sl.literal_text(bad)


def test_refused_shapes():
    for call in (lambda: sl.name_text(""), lambda: sl.one_of("x", []), lambda: sl.all_of([]),
                 lambda: sl.compare("x", "=", 1)):
        with pytest.raises(ValueError):
            call()


# ------------------------------------------------------------------ the writers' users

@settings(max_examples=150, deadline=None)
@given(name=names, data=st.data())
def test_discovered_conditions_parse_back_to_their_masks(name, data):
    kind, values = data.draw(columns())
    frame = pd.DataFrame({name: _series(kind, values)})
    v = _value(data.draw, kind, values)
    found = [Condition(name, "missing"), Condition(name, "==", v)]
    if kind in ("int", "float"):
        low, high = sorted(data.draw(st.tuples(floats, floats)))
        found += [Condition(name, "range", low=low, high=high), Condition(name, "range", low=low),
                  Condition(name, "range", high=high), Condition(name, "range")]
    for c in found:
        assert evaluate(c.text, frame).to_numpy().tolist() == c.mask(frame).tolist(), c.text


@settings(max_examples=80, deadline=None)
@given(name=names, data=st.data())
def test_context_cells_are_described_by_their_rows(name, data):
    kind, values = data.draw(columns())
    benchmark = pd.DataFrame({name: _series(kind, values)})
    cells, _, labels = context_cells(benchmark, benchmark.iloc[:1], [name])
    for i, label in enumerate(labels):
        assert evaluate(label, benchmark).to_numpy().tolist() == (cells == i).tolist(), label


@settings(max_examples=100, deadline=None)
@given(name=names, data=st.data())
def test_untested_context_definitions_select_their_rows(name, data):
    kind, values = data.draw(columns())
    s = _series(kind, values)
    frame = pd.DataFrame({name: s})
    v = _value(data.draw, kind, values)
    u = UntestedContext("u", "unseen_value", name, v, 0, 1, 0.1, (0.0, 1.0), 30)
    expected = np.array([x is not None and x == v for x in values])
    assert evaluate(untested_definition(u, {}), frame).to_numpy().tolist() == expected.tolist()
    pooled = UntestedContext("p", "pooled_values", name, (v,), 0, 1, 0.1, (0.0, 1.0), 30)
    assert evaluate(untested_definition(pooled, {}), frame).to_numpy().tolist() == expected.tolist()
    if kind in ("int", "float"):
        for kind_of_range, op in (("below_range", operator.lt), ("above_range", operator.gt)):
            bound = UntestedContext("r", kind_of_range, name, v, 0, 1, 0.1, (0.0, 1.0), 30)
            with np.errstate(invalid="ignore"):
                rows = op(s, v).to_numpy(bool) & s.notna().to_numpy()
            assert evaluate(untested_definition(bound, {}), frame).to_numpy().tolist() == rows.tolist()


def test_keyword_columns_are_quoted_and_plain_ones_are_not():
    assert sl.equals("site", "a") == 'site == "a"'  # the text of ordinary names is unchanged
    assert sl.in_range("age", 18.0, 65.5) == "18 <= age < 65.5"
    assert sl.equals("missing", 1) == "`missing` == 1"
    assert sl.is_missing("in") == "`in` is missing"
    assert sl.one_of("between", [-1.5, "x"]) == '`between` in [-1.5, "x"]'
    assert sl.equals("a`b", True) == "`a``b` == true"
    assert sl.in_range("x") == "x is not missing"
