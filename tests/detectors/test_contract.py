"""The contract every exported two-sample detector keeps (river-style contract tests).

To put another detector through the same checks, add one :class:`Case` to ``CASES``:
its exported name, how to build it with a seed, and how to make data (``rng, n, shift``).
Detectors whose ``fit``/``test`` take other arguments give ``fit``/``test`` adapters.
A result must expose ``is_shift`` (bool) and ``tests`` (a tuple of ``ShiftTest``).
"""
from __future__ import annotations

import doctest
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import detectors
from detectors import DetectorInputError, NotFittedError
from detectors.base import ShiftTest
from tests.detectors.conftest import mixed_frame, numeric_frame


@dataclass(frozen=True)
class Case:
    name: str  # as exported in detectors.__all__
    build: Callable[[int], Any]  # random_state -> unfitted detector
    data: Callable[[np.random.Generator, int, float], pd.DataFrame]  # (rng, n, shift) -> input
    nan_is_missing: bool = True  # NaN is a missing value (else: an error naming the column)
    fit: Callable[[Any, Any], Any] = lambda det, data: det.fit(data)
    test: Callable[[Any, Any], Any] = lambda det, data: det.test(data)
    null_n: int = 200
    null_reps: int = 100
    power_n: int = 400
    power_shift: float = 0.8


def _outputs(rng, n, shift):
    concentration = np.array([2.0, 2.0, 2.0]) + np.array([shift * 2, 0, -shift])
    return pd.DataFrame(rng.dirichlet(concentration, size=n), columns=["proba_a", "proba_b", "proba_c"])


def _small_numeric(rng, n, shift):
    return numeric_frame(rng, n, p=5, shift=shift)


CASES = [
    Case("CovariateShiftDetector", lambda seed: detectors.CovariateShiftDetector(random_state=seed), mixed_frame,
         null_reps=150),
    Case("ClassifierTwoSampleDetector",
         lambda seed: detectors.ClassifierTwoSampleDetector(classifier="logistic", random_state=seed), _small_numeric),
    Case("MMDDetector", lambda seed: detectors.MMDDetector(n_permutations=99, random_state=seed), _small_numeric),
    Case("OutputShiftDetector", lambda seed: detectors.OutputShiftDetector(random_state=seed), _outputs,
         nan_is_missing=False),
]
IDS = [case.name for case in CASES]


def _p_values(result) -> list[float]:
    assert isinstance(result.is_shift, bool)
    assert result.tests and all(isinstance(t, ShiftTest) for t in result.tests)
    return [t.p_value for t in result.tests if t.status == "ok"]


def test_every_case_is_exported():
    assert all(case.name in detectors.__all__ for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_docstring_examples_run(case):
    module = inspect.getmodule(type(case.build(0)))
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0 and outcome.failed == 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_fit_returns_self_and_test_before_fit_fails(case):
    data = case.data(np.random.default_rng(0), 100, 0.0)
    with pytest.raises(NotFittedError):
        case.test(case.build(0), data)
    det = case.build(0)
    assert case.fit(det, data) is det
    assert all(0 <= p <= 1 for p in _p_values(case.test(det, data)))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_deterministic_under_a_seed(case):
    rng = np.random.default_rng(1)
    ref, cur = case.data(rng, 150, 0.0), case.data(rng, 150, 0.3)
    runs = [case.test(case.fit(case.build(7), ref), cur).to_dict() for _ in range(2)]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_bad_inputs_give_clear_errors(case):
    rng = np.random.default_rng(2)
    ref, cur = case.data(rng, 120, 0.0), case.data(rng, 120, 0.0)
    column = [c for c in ref.columns if pd.api.types.is_float_dtype(ref[c])][0]
    det = case.fit(case.build(0), ref)
    with pytest.raises(DetectorInputError, match=column):
        case.test(det, cur.assign(**{column: np.r_[np.inf, cur[column].to_numpy()[1:]]}))
    with pytest.raises(DetectorInputError, match="empty"):
        case.fit(case.build(0), ref.iloc[:0])
    with pytest.raises(DetectorInputError, match="empty"):
        case.test(det, cur.iloc[:0])
    with pytest.raises(DetectorInputError, match=cur.columns[-1]):
        case.test(det, cur.drop(columns=cur.columns[-1]))
    with pytest.raises(DetectorInputError, match=column):
        case.fit(case.build(0), ref.assign(**{column: np.nan}))
    with_nan = cur.copy()
    with_nan.loc[with_nan.index[:5], column] = np.nan
    if case.nan_is_missing:
        assert all(0 <= p <= 1 for p in _p_values(case.test(det, with_nan)))
    else:
        with pytest.raises(DetectorInputError, match=column):
            case.test(det, with_nan)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_single_row_is_insufficient_and_constant_column_is_defined(case):
    rng = np.random.default_rng(3)
    ref, cur = case.data(rng, 120, 0.0), case.data(rng, 120, 0.0)
    det = case.fit(case.build(0), ref)
    one = case.test(det, cur.iloc[:1])
    assert one.is_shift is False and {t.status for t in one.tests} == {"insufficient_data"}
    column = [c for c in ref.columns if pd.api.types.is_float_dtype(ref[c])][0]
    constant = case.fit(case.build(0), ref.assign(**{column: 0.5}))
    assert all(0 <= p <= 1 for p in _p_values(case.test(constant, cur.assign(**{column: 0.5}))))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_null_calibration(case):
    rng = np.random.default_rng(4)
    alpha = 0.05
    alarms = 0
    for rep in range(case.null_reps):
        det = case.fit(case.build(rep), case.data(rng, case.null_n, 0.0))
        result = case.test(det, case.data(rng, case.null_n, 0.0))
        alarms += result.is_shift
        assert all(0 <= p <= 1 for p in _p_values(result))
    assert alarms <= stats.binom.ppf(0.999, case.null_reps, alpha)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_power_on_a_known_shift(case):
    rng = np.random.default_rng(5)
    found = sum(case.test(case.fit(case.build(rep), case.data(rng, case.power_n, 0.0)),
                          case.data(rng, case.power_n, case.power_shift)).is_shift for rep in range(10))
    assert found >= 9
