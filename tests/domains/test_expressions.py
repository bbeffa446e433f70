"""The slice-expression language: parsing, positions of faults, validation, evaluation, safety."""
import builtins

import numpy as np
import pandas as pd
import pytest

from domains import expressions as ex

COLUMNS = {"fitzpatrick": "numeric", "modality": "categorical", "age": "numeric", "ruler": "boolean",
           "head_pose_yaw": "numeric", "skin tone": "categorical"}


@pytest.fixture
def frame():
    return pd.DataFrame({
        "fitzpatrick": [1, 5, 6, np.nan, 5],
        "modality": ["clinical", "smartphone", "smartphone", "smartphone", None],
        "age": [10, 17, 18, 70, np.nan],
        "ruler": [True, False, True, False, True],
        "head_pose_yaw": [-45.0, 10.0, 31.0, -30.0, np.nan],
        "skin tone": ["light", "dark", "dark", "light", "dark"],
    })


@pytest.mark.parametrize("text, expected", [
    ('fitzpatrick in [5, 6] and modality == "smartphone"', [False, True, True, False, False]),
    ("fitzpatrick not in [5, 6]", [True, False, False, False, False]),  # missing -> False
    ("abs(head_pose_yaw) > 30", [True, False, True, False, False]),
    ("age between 0 and 17", [True, True, False, False, False]),
    ("0 <= age < 18", [True, True, False, False, False]),
    ("age is missing", [False, False, False, False, True]),
    ("age is not missing and age >= 18", [False, False, True, True, False]),
    ("ruler", [True, False, True, False, True]),
    ("ruler == false", [False, True, False, True, False]),
    ("not ruler or (age < 12)", [True, True, False, True, False]),
    ("modality != 'clinical'", [False, True, True, True, False]),  # missing modality -> False
    ("not (age < 18)", [False, False, True, True, True]),  # `not` is plain negation: missing included
    ("`skin tone` == \"dark\" AND fitzpatrick >= 5.5", [False, False, True, False, False]),
    ("head_pose_yaw < -40 or head_pose_yaw > 30", [True, False, True, False, False]),
    ("fitzpatrick in [5, 6,]", [False, True, True, False, True]),
])
def test_valid_expressions_evaluate_vectorised(frame, text, expected):
    node = ex.parse(text)
    ex.validate(node, COLUMNS, text=text)
    result = ex.evaluate(node, frame)
    assert result.dtype == bool and list(result.index) == list(frame.index)
    assert result.tolist() == expected


@pytest.mark.parametrize("text, position, fragment", [
    ("fitzpatrick in [5, 6", 20, "']' or ','"),
    ("age >", 5, "expected a column, a literal"),
    ("age = 5", 4, "did you mean '=='"),
    ("(age < 5", 8, "expected ')'"),
    ("age < 5 and", 11, "expected a column"),
    ("age < 5 age > 3", 8, "unexpected 'age'"),
    ("", 0, "empty expression"),
    ("modality is present", 12, "'missing'"),
    ("age between 1 or 2", 14, "'and' in 'between"),
    ("fitzpatrick in (5, 6)", 15, "'['"),
    ("age < 5; drop", 7, "unexpected character ';'"),
])
def test_syntax_errors_name_the_position_with_a_caret(text, position, fragment):
    with pytest.raises(ex.ExpressionError) as info:
        ex.parse(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.position == position
    assert fragment in str(err)
    lines = str(err).splitlines()
    if text:
        assert lines[1].strip() == text.strip()
        assert lines[2].index("^") - 2 == position  # caret under the fault


@pytest.mark.parametrize("text", [
    "__import__('os')",
    "__import__('os').system('true')",
    "modality.__class__ == 'x'",
    "exec('1')",
    "open('/etc/passwd')",
    "lambda: 1",
    "age < 5 if True else 1",
    "[c for c in modality]",
    "age ** 2 > 1",
    "age + 1 > 2",
])
def test_code_is_never_executed(monkeypatch, text):
    def boom(*args, **kwargs):
        raise AssertionError("eval/exec/compile must never be called")
    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, boom)
    with pytest.raises(ex.ExpressionError):
        ex.parse(text)


def test_source_has_no_eval():
    import inspect

    import domains._syntax as syntax
    for module in (ex, syntax):
        source = inspect.getsource(module)
        assert "eval(" not in source.replace("_eval(", "").replace("evaluate(", "")
        assert "exec(" not in source


def test_validation_reports_unknown_columns_with_suggestion():
    text = "fitzpatrik in [5, 6] and modalty == 'x'"
    with pytest.raises(ex.ExpressionError) as info:
        ex.validate(ex.parse(text), COLUMNS, text=text)
    err = info.value
    assert [p.position for p in err.problems] == [0, 25]
    assert "did you mean 'fitzpatrick'" in err.problems[0].message
    assert "did you mean 'modality'" in err.problems[1].message


@pytest.mark.parametrize("text, position, fragment", [
    ('modality < "smartphone"', 9, "cannot order categorical column 'modality'"),
    ('age == "old"', 4, "cannot compare numeric column 'age' with string literal"),
    ("abs(modality) > 3", 0, "abs() needs a numeric value"),
    ("modality", 0, "is not boolean"),
    ("ruler > 1", 6, "cannot order boolean column"),
    ("1 < 2", 2, "two literals"),
    ("5 in [5]", 2, "must be a column"),
    ('modality between "a" and "b"', 9, "'between' needs numeric values"),
    ("age in [1, 'x']", 11, "cannot compare numeric column 'age' with string literal"),
])
def test_validation_reports_type_errors_with_positions(text, position, fragment):
    with pytest.raises(ex.ExpressionError) as info:
        ex.validate(ex.parse(text), COLUMNS, text=text)
    assert info.value.position == position
    assert fragment in str(info.value)


def test_columns_used_and_literals():
    node = ex.parse('fitzpatrick in [5, 6] and (modality == "smartphone" or abs(age) > 3) and fitzpatrick != 1')
    assert ex.columns_used(node) == ("fitzpatrick", "modality", "age")
    assert ex.literals_by_column(node) == {"fitzpatrick": (5, 6, 1), "modality": ("smartphone",)}


@pytest.mark.parametrize("text", [
    'fitzpatrick in [5, 6] and modality == "smartphone"',
    "not (age < 18 or ruler) and head_pose_yaw between -30 and 30.5",
    "`skin tone` is not missing or modality not in ['a', \"b\\\"c\"]",
    "0 <= age < 18",
])
def test_to_text_round_trips(frame, text):
    node = ex.parse(text)
    again = ex.parse(ex.to_text(node))
    assert ex.to_text(again) == ex.to_text(node)
    assert ex.evaluate(again, frame).equals(ex.evaluate(node, frame))


def test_booleans_stored_as_text_or_numbers():
    df = pd.DataFrame({"ruler": ["true", "False", "1", "no", None], "flag": [1, 0, 1, 0, np.nan]})
    assert ex.evaluate("ruler == true", df).tolist() == [True, False, True, False, False]
    assert ex.evaluate("flag", df).tolist() == [True, False, True, False, False]


def test_evaluate_names_missing_column(frame):
    with pytest.raises(ex.ExpressionError, match="'site' is not in the data"):
        ex.evaluate("site == 'a'", frame)


def test_ast_is_immutable():
    node = ex.parse("age < 5")
    with pytest.raises(Exception):
        node.op = ">"  # frozen dataclass
