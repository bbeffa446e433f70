"""The Python API contract of every exported detector and estimator.

* one verb pair: ``fit(reference, ...)`` returns ``self``, then ``test(current, ...)``; estimators (a
  quantity with a CI, no hypothesis) use ``fit`` then ``estimate``;
* keyword-only constructor parameters, stored as given (no validation in ``__init__``);
* every parameter validated in ``fit``/``test`` with an error naming it (``BAD_VALUES``);
* results immutable all the way down (:func:`assert_immutable`).

A new class in ``detectors.__all__`` with a ``fit`` needs a :data:`~tests.detectors.api_cases.CASES`
entry, and a new parameter a row in :data:`~tests.detectors.api_cases.BAD_VALUES`; the coverage tests
below fail until they exist. The names of the data arguments, and their former names, are checked in
``test_api_names.py``.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import pickle
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

import detectors
from detectors import NotFittedError
from detectors.base import FrozenDict, Result, ShiftTest, freeze, to_jsonable
from tests.detectors.api_cases import BAD_VALUES, CASES, ESTIMATORS, _bad_cases, _context, _labels, _params


def test_every_exported_class_with_fit_has_a_case():
    exported = {n for n in detectors.__all__ if inspect.isclass(getattr(detectors, n)) and
                hasattr(getattr(detectors, n), "fit")}
    assert exported == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_parameter_has_bad_values(name):
    missing = [p for p in _params(getattr(detectors, name)) if p not in BAD_VALUES]
    assert not missing, f"add bad values for {missing} to BAD_VALUES"


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_verb_pair(name):
    cls = getattr(detectors, name)
    verb = "estimate" if name in ESTIMATORS else "test"
    other = "test" if verb == "estimate" else "estimate"
    assert callable(getattr(cls, "fit")) and callable(getattr(cls, verb)) and not hasattr(cls, other)
    # the same names for the same parameters: alpha, correction, random_state, n_bootstrap
    assert "random_state" in _params(cls)
    assert not set(_params(cls)) & {"seed", "rng", "n_boot", "method", "level", "n_resamples"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_keyword_only_parameters_stored_as_given(name):
    cls = getattr(detectors, name)
    params = inspect.signature(cls.__init__).parameters
    named = [p for p in params.values() if p.name != "self"]
    assert named and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in named)
    sentinel = {p.name: object() for p in named}
    det = cls(**sentinel)  # no validation in __init__
    assert all(getattr(det, p) is value for p, value in sentinel.items())


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_returns_self_and_use_before_fit_fails(name):
    kwargs, fit, use = CASES[name]
    cls = getattr(detectors, name)
    with pytest.raises(NotFittedError):
        use(cls(**kwargs))
    det = cls(**kwargs)
    assert fit(det) is det
    assert isinstance(use(det), Result)


@pytest.mark.parametrize("name, param, bad", list(_bad_cases()))
def test_bad_parameter_values_are_refused_by_name(name, param, bad):
    kwargs, fit, use = CASES[name]
    det = getattr(detectors, name)(**{**kwargs, param: bad})
    with pytest.raises(ValueError) as caught:
        use(fit(det))  # sklearn style: validated in fit (or, for what needs the data, in test)
    message = str(caught.value)
    assert param in message, message
    if isinstance(bad, (str, int, float)) or bad is None:
        assert repr(bad) in message, message


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_are_immutable_all_the_way_down(name):
    kwargs, fit, use = CASES[name]
    result = use(fit(getattr(detectors, name)(**kwargs)))
    assert_immutable(result, name)
    json.dumps(result.to_dict(), allow_nan=False)
    tests = getattr(result, "tests", None)
    if tests:  # re-corrected copies are frozen the same way
        assert_immutable(result.with_tests(tests), f"{name}.with_tests")


_SCALARS = (str, bytes, int, float, complex, bool, type(None), np.generic, Enum)


def assert_immutable(value, path: str = "result") -> None:
    """Walk dataclass fields, mappings, tuples and arrays; fail on anything that can be changed."""
    if isinstance(value, _SCALARS):
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        assert type(value).__dataclass_params__.frozen, f"{path}: {type(value).__name__} is not frozen"
        if fields:
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(value, fields[0].name, None)
        for f in fields:
            assert_immutable(getattr(value, f.name), f"{path}.{f.name}")
        return
    if isinstance(value, Mapping):
        assert type(value) is not dict, f"{path}: a plain dict"
        key = next(iter(value), "__probe__")
        with pytest.raises(TypeError):
            value[key] = None
        for k, v in value.items():
            assert_immutable(k, f"{path} key {k!r}")
            assert_immutable(v, f"{path}[{k!r}]")
        return
    if isinstance(value, (tuple, frozenset)):
        for i, v in enumerate(value):
            assert_immutable(v, f"{path}[{i}]")
        return
    if isinstance(value, np.ndarray):
        assert not value.flags.writeable, f"{path}: a writeable array"
        if value.dtype == object:
            for i, v in enumerate(value.ravel()):
                assert_immutable(v, f"{path}.flat[{i}]")
        return
    pytest.fail(f"{path}: {type(value).__name__} can be changed")


def test_freeze_and_serialise_nested_containers():
    raw = {"a": [1, {"b": [2.0, float("nan")]}], "arr": np.arange(3.0), "s": {1}}
    frozen = freeze(raw)
    assert isinstance(frozen, FrozenDict) and frozen["a"] == (1, {"b": (2.0, frozen["a"][1]["b"][1])})
    assert not frozen["arr"].flags.writeable and raw["arr"].flags.writeable  # a read-only copy
    assert_immutable(frozen)
    assert to_jsonable(frozen) == {"a": [1, {"b": [2.0, None]}], "arr": [0.0, 1.0, 2.0], "s": [1]}
    assert to_jsonable(MappingProxyType({"k": (1,)})) == {"k": [1]}
    assert pickle.loads(pickle.dumps(frozen))["a"][0] == 1 and {**frozen}["a"] == frozen["a"]
    test = ShiftTest("x", "ks", 0.1, 0.2, 0.2, 0.3, "e", 0.1, 10, 10, False, details={"ci": [0.0, 1.0]})
    assert test.details == {"ci": (0.0, 1.0)} and isinstance(test.details, FrozenDict)
    again = dataclasses.replace(test, details={**test.details, "reason": "new"})
    assert isinstance(again.details, FrozenDict) and "reason" not in test.details
    with pytest.raises(TypeError):
        test.details["reason"] = "in place"


def _annotations(n_items=60, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items)
    rows = [(i, a, int(t if rng.random() < 0.8 else 1 - t)) for i, t in enumerate(truth) for a in "abc"]
    return pd.DataFrame(rows, columns=["item_id", "annotator_id", "label"])


FUNCTIONS = {
    "attribute_performance": lambda: detectors.attribute_performance(
        np.r_[np.zeros(100, int), np.ones(100, int)], np.ones(200), np.r_[np.zeros(50, int), np.ones(150, int)],
        np.ones(200), n_bootstrap=20),
    "discover_weak_slices": lambda: detectors.discover_weak_slices(
        _context(400), (_context(400).site == "a").to_numpy(int) * (np.arange(400) % 2)),
    "observed_performance": lambda: detectors.observed_performance(*_labels(200, 2), n_bootstrap=20),
    "assess_label_quality": lambda: detectors.assess_label_quality(_annotations()),
    "drop_update": lambda: detectors.drop_update(detectors.drop_start(80, 100), 30, 50)[1],
    "shift_update": lambda: detectors.shift_update(detectors.shift_start(200), np.zeros(20))[1],
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_results_are_immutable_too(name):
    result = FUNCTIONS[name]()
    assert isinstance(result, Result)
    assert_immutable(result, name)
