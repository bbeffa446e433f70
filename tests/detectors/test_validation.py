"""The shared parameter checks: one message shape, naming the parameter, what is allowed and the value."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from detectors import discover_weak_slices
from detectors.correction import adjust_pvalues
from detectors.intervals import z_value
from detectors.online_testing import lord_plus_plus
from detectors.validation import (
    DetectorInputError,
    as_mask,
    check_distinct,
    check_in,
    check_int,
    check_names,
    check_number,
    check_numbers,
    check_probabilities,
)


@pytest.mark.parametrize("check, value, allowed", [
    (lambda v: check_int("n", v, minimum=2), 1, "an integer >= 2"),
    (lambda v: check_int("n", v, minimum=1, maximum=3), 4, "an integer in [1, 3]"),
    (lambda v: check_int("n", v), True, "an integer >= 1"),  # a bool is not a count
    (lambda v: check_number("x", v, minimum=0, maximum=1, open_low=True), 0, "a finite number in (0, 1]"),
    (lambda v: check_number("x", v), float("inf"), "a finite number"),
    (lambda v: check_in("mode", v, ["a", "b"]), "c", "one of ['a', 'b']"),
    (lambda v: check_in("flag", v, [1, 2]), True, "one of [1, 2]"),  # True is not an allowed 1
    (lambda v: check_names("metrics", v, ["accuracy"]), ["f7"], "None or a list of names from ['accuracy']"),
    (lambda v: check_names("metrics", v, ["accuracy"]), "accuracy", "None or a list of names"),
    (lambda v: check_distinct("classes", v), ["a", "a"], "None or a sequence of at least 2 distinct names"),
])
def test_one_message_shape(check, value, allowed):
    with pytest.raises(DetectorInputError) as caught:
        check(value)
    message = str(caught.value)
    assert f" must be {allowed}" in message and message.endswith(f", got {value!r}."), message


def test_accepted_values_pass():
    check_int("n", np.int64(3), minimum=1, maximum=3)
    check_number("x", np.float32(0.5), minimum=0, maximum=1)
    check_names("metrics", None, ["accuracy"])
    check_names("metrics", ("accuracy",), ["accuracy"])
    check_distinct("classes", ["a", "b"])
    check_probabilities("p", [0.0, np.nan, 1.0])
    with pytest.raises(DetectorInputError, match=r"p must lie in \[0, 1\] \(no NaN\)"):
        check_probabilities("p", [0.5, np.nan], allow_nan=False)


@pytest.mark.parametrize("param, bad", [
    ("max_conditions", 4), ("min_support", 0), ("n_bins", 1.5), ("max_categories", 0), ("discrete_max_unique", -1),
    ("min_gap", 2), ("alpha", 1), ("correction", "fdr"), ("max_results", 0),
])
def test_discovery_refuses_bad_parameters_by_name(param, bad):
    context = pd.DataFrame({"site": ["a", "b"] * 50})
    with pytest.raises(DetectorInputError) as caught:
        discover_weak_slices(context, np.zeros(100, int), **{param: bad})
    assert param in str(caught.value) and repr(bad) in str(caught.value)


def test_functions_use_the_same_checks():
    with pytest.raises(DetectorInputError, match=r"confidence must be a finite number in \(0, 1\), got 1"):
        z_value(1)
    with pytest.raises(DetectorInputError, match=r"correction must be one of .*got 'fdr'"):
        adjust_pvalues([0.1], "fdr")
    with pytest.raises(DetectorInputError, match=r"p-values must lie in \[0, 1\]"):
        adjust_pvalues([1.5])
    with pytest.raises(DetectorInputError, match=r"w0 must be a finite number in \(0, 0.05\], got 0.1"):
        lord_plus_plus([0.01], alpha=0.05, w0=0.1)
    with pytest.raises(DetectorInputError, match=r"alpha must be"):
        lord_plus_plus([0.01], alpha=0)


@pytest.mark.parametrize("values, message", [
    ([], "bets must be a non-empty sequence of numbers, got []."),
    ("0.5", "bets must be a non-empty sequence of numbers, got '0.5'."),
    ((0.5, -1.0), "bets[1] must be a finite number in (0, inf), got -1.0."),
    ((0.5, float("nan")), "bets[1] must be a finite number in (0, inf), got nan."),
])
def test_a_sequence_of_numbers_names_the_bad_item(values, message):
    check_numbers("bets", (0.5, 1.0), minimum=0, open_low=True)
    with pytest.raises(DetectorInputError) as caught:
        check_numbers("bets", values, minimum=0, open_low=True)
    assert str(caught.value) == message


def test_a_mask_is_one_dimensional_boolean_of_the_rows_length():
    assert as_mask("rows", np.array([1, 0, 1])).tolist() == [True, False, True]
    assert as_mask("rows", [True, False], 2).dtype == bool
    with pytest.raises(DetectorInputError, match=r"rows must be a boolean mask of shape \(3,\), got shape \(2,\)"):
        as_mask("rows", [True, False], 3)
    with pytest.raises(DetectorInputError, match=r"rows must be a boolean mask of shape \(n,\)"):
        as_mask("rows", [[True]])
    with pytest.raises(DetectorInputError, match=r"rows must be boolean \(or 0/1\), got values \[0, 2\]"):
        as_mask("rows", [0, 2])
