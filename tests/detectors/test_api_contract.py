"""The Python API contract of every exported detector and estimator.

* one verb pair: ``fit(reference, ...)`` returns ``self``, then ``test(current, ...)``; the former
  names of those arguments (``benchmark``/``production``) still work with a ``DeprecationWarning``;
  estimators (a quantity with a CI, no hypothesis) use ``fit`` then ``estimate``;
* keyword-only constructor parameters, stored as given (no validation in ``__init__``);
* every parameter validated in ``fit``/``test`` with an error naming it (``BAD_VALUES``);
* results immutable all the way down (:func:`assert_immutable`).

A new class in ``detectors.__all__`` with a ``fit`` needs a :data:`CASES` entry, and a new
parameter a row in :data:`BAD_VALUES`; the coverage tests below fail until they exist.
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
from detectors import NotFittedError, Outcomes
from detectors.base import FrozenDict, Result, ShiftTest, freeze, to_jsonable
from detectors.sketch_tests import ConfusionSummary, PredictionSummary

ESTIMATORS = {"LabelShiftEstimator", "ConfidenceBasedEstimator", "PriorReweightedEstimator"}


def _frames(n=120):
    rng = np.random.default_rng(0)
    ref = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n), "c": rng.choice(list("abc"), n)})
    cur = pd.DataFrame({"x": rng.normal(0.3, 1, size=n), "z": rng.normal(size=n), "c": rng.choice(list("abc"), n)})
    return ref, cur


def _numeric(n=100):
    ref, cur = _frames(n)
    return ref[["x", "z"]], cur[["x", "z"]]


def _labels(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return y, np.where(rng.random(n) < 0.8, y, (y + 1) % k)


def _binary_scores(n=300, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return (rng.random(n) < s).astype(int), s


def _context(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"site": rng.choice(["a", "b"], n), "age": rng.normal(50, 10, n)})


def _slices(ctx_b, ctx_p):
    return {"a": ((ctx_b.site == "a").to_numpy(), (ctx_p.site == "a").to_numpy())}


def _outputs(seed):
    return np.random.default_rng(seed).dirichlet([2, 2, 2], size=150)


# name -> (fast valid parameters, fit(det) -> det.fit(...), use(det) -> det.test(...) / det.estimate(...))
CASES = {
    "CovariateShiftDetector": ({}, lambda d: d.fit(_frames()[0]), lambda d: d.test(_frames()[1])),
    "ClassifierTwoSampleDetector": ({"classifier": "logistic"}, lambda d: d.fit(_numeric()[0]),
                                    lambda d: d.test(_numeric()[1])),
    "MMDDetector": ({"n_permutations": 20}, lambda d: d.fit(_numeric()[0]), lambda d: d.test(_numeric()[1])),
    "OutputShiftDetector": ({}, lambda d: d.fit(_outputs(0)), lambda d: d.test(_outputs(1))),
    "LabelShiftEstimator": ({"n_bootstrap": 20}, lambda d: d.fit(*_labels()),
                            lambda d: d.estimate(_labels(seed=1)[1])),
    "ConfidenceBasedEstimator": ({"n_bootstrap": 20}, lambda d: d.fit(*_binary_scores()),
                                 lambda d: d.estimate(_binary_scores(seed=1)[1])),
    "PriorReweightedEstimator": ({"n_bootstrap": 20}, lambda d: d.fit(*_labels()),
                                 lambda d: d.estimate(_labels(seed=1)[1])),
    "ConceptShiftDetector": ({}, lambda d: d.fit(*_labels()), lambda d: d.test(*_labels(seed=1))),
    "ContextShiftDetector": ({}, lambda d: d.fit(_context()),
                             lambda d: d.test(_context(seed=1), slices=_slices(_context(), _context(seed=1)))),
    "SliceEvaluator": ({}, lambda d: d.fit(Outcomes(_labels(200, 2)[1], _labels(200, 2)[0])),
                       lambda d: d.test(Outcomes(_labels(200, 2, 1)[1], _labels(200, 2, 1)[0]),
                                        slices=_slices(_context(), _context(seed=1)))),
    "ConditionalShiftDetector": ({"n_permutations": 20},
                                 lambda d: d.fit(_context()[["age"]], (_context().site == "a").to_numpy(int)),
                                 lambda d: d.test(_context(seed=1)[["age"]],
                                                  (_context(seed=1).site == "a").to_numpy(int))),
    "EmbeddingShiftDetector": ({"n_permutations": 20, "n_clusters": 3, "max_samples": 100},
                               lambda d: d.fit(np.random.default_rng(0).normal(size=(150, 3))),
                               lambda d: d.test(np.random.default_rng(1).normal(size=(150, 3)))),
}

NAN = float("nan")
# parameter -> values that must be refused (by every class that takes the parameter)
BAD_VALUES = {
    "alpha": [0, 1, -0.1, "0.05", None, NAN],
    "correction": ["fdr", None, 1],
    "random_state": [-1, 1.5, "0", None],
    "n_bootstrap": [0, 2.5, "200"],
    "n_permutations": [0, 1.5],
    "min_samples": [0, 2.5, "30"],
    "confidence": [0, 1, 95],
    "effect_floor": [-0.1, NAN, "small"],
    "label_effect_floor": [-0.1, 2],
    "mmd_effect_floor": [-1, "x"],
    "region_effect_floor": [-0.1, 1.5],
    "effect_floors": [{"no_such_effect": 0.1}, "big", {"__any__": -1}],
    "max_samples": [0, 10.5],
    "max_categories": [0],
    "max_listed_values": [0, 2.5],
    "max_rows": [0],
    "min_slice_size": [0],
    "min_production_count": [0],
    "min_denominator": [1],
    "min_region_size": [0],
    "discrete_max_unique": [-1, 2.5],
    "categorical_max_unique": [0],
    "numeric_test": ["ad"],
    "min_expected": [-1],
    "classifier": ["svm"],
    "n_folds": [1, 2.5],
    "bandwidth": [0, -1.0, "median"],
    "classes": ["abc", ["a", "a", "b"]],
    "regularization": ["ridge", -1.0],
    "ratio_floor": [1.0, 0.5],
    "max_condition": [1.0, 0],
    "calibrate": ["yes", 1],
    "threshold": [-0.1, 1.5],
    "metrics": ["accuracy", ["accuracy", "no_such_metric"]],
    "positive": ["no-such-class"],
    "metric": ["f7"],
    "n_clusters": [0],
    "novelty_quantile": [0, 1.5],
}


def _params(cls) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def _bad_cases():
    for name in sorted(CASES):
        cls = getattr(detectors, name)
        for param in _params(cls):
            for k, bad in enumerate(BAD_VALUES.get(param, [])):
                if param == "effect_floors" and isinstance(bad, dict) and "__any__" in bad:
                    bad = {_any_effect(cls): -1}
                yield pytest.param(name, param, bad, id=f"{name}-{param}-{k}")


def _any_effect(cls) -> str:
    module = inspect.getmodule(cls)
    floors = next(v for k, v in vars(module).items() if k.endswith("EFFECT_FLOORS") and isinstance(v, dict))
    return next(iter(floors))


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


def test_old_keyword_names_still_work_with_a_deprecation_warning():
    from detectors.correction import readjust

    tests = [ShiftTest(n, "ks", 0.0, p, p, 0.5, "e", 0.1, 9, 9, False) for n, p in (("a", 0.01), ("b", 0.04))]
    with pytest.warns(DeprecationWarning, match="correction"):
        old = readjust(tests, method="holm")
    assert old == readjust(tests, correction="holm")
    y, p = _labels(200, 2)
    with pytest.warns(DeprecationWarning, match="n_bootstrap"):
        old = detectors.metric_with_ci("balanced_accuracy", y, p, n_boot=50)
    assert old == detectors.metric_with_ci("balanced_accuracy", y, p, n_bootstrap=50)
    with pytest.raises(TypeError, match="both"):
        detectors.metric_with_ci("accuracy", y, p, n_boot=50, n_bootstrap=50)
    kwargs, fit, use = CASES["SliceEvaluator"]
    with pytest.warns(DeprecationWarning, match="fit"):
        ev = detectors.SliceEvaluator().evaluate(_slices(_context(), _context(seed=1)),
                                                 Outcomes(_labels(200, 2)[1], _labels(200, 2)[0]),
                                                 Outcomes(_labels(200, 2, 1)[1], _labels(200, 2, 1)[0]))
    assert ev == use(fit(detectors.SliceEvaluator()))


# the data arguments' former names (benchmark/production): old name -> new name, per verb
OLD_DATA_NAMES = {
    "ContextShiftDetector": {"fit": ("benchmark", "reference"), "test": ("production", "current")},
    "SliceEvaluator": {"fit": ("benchmark", "reference"), "test": ("production", "current")},
    "EmbeddingShiftDetector": {"fit": ("benchmark", "reference"), "test": ("production", "current")},
    "LabelShiftEstimator": {"estimate": ("y_pred_production", "y_pred")},
    "PriorReweightedEstimator": {"estimate": ("y_pred_production", "y_pred")},
    "ConfidenceBasedEstimator": {"estimate": ("scores_production", "scores")},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_data_arguments_are_named_reference_and_current(name):
    cls = getattr(detectors, name)
    verbs = ("fit", "estimate" if name in ESTIMATORS else "test")
    for verb in verbs:
        params = list(inspect.signature(getattr(cls, verb)).parameters)[1:]
        assert not [p for p in params if p in ("benchmark", "production") or p.endswith("_production")], (verb, params)
    fit_first = list(inspect.signature(cls.fit).parameters)[1]
    assert fit_first in ("reference", "y_true", "outputs"), fit_first


def _positional_and_renamed(name):
    """The same data given positionally and by the deprecated keyword."""
    cls = getattr(detectors, name)
    kwargs = CASES[name][0]
    if name in ("ContextShiftDetector", "SliceEvaluator", "EmbeddingShiftDetector"):
        if name == "ContextShiftDetector":
            ref, cur, extra = _context(), _context(seed=1), {"slices": _slices(_context(), _context(seed=1))}
        elif name == "SliceEvaluator":
            ref = Outcomes(_labels(200, 2)[1], _labels(200, 2)[0])
            cur = Outcomes(_labels(200, 2, 1)[1], _labels(200, 2, 1)[0])
            extra = {"slices": _slices(_context(), _context(seed=1))}
        else:
            ref, cur = (np.random.default_rng(s).normal(size=(150, 3)) for s in (0, 1))
            extra = {}
        new = cls(**kwargs).fit(ref).test(cur, **extra)
        with pytest.warns(DeprecationWarning, match=r"fit\(benchmark=\.\.\.\) is deprecated; use reference="):
            det = cls(**kwargs).fit(benchmark=ref)
        with pytest.warns(DeprecationWarning, match=r"test\(production=\.\.\.\) is deprecated; use current="):
            old = det.test(production=cur, **extra)
        return new, old
    old_name, _ = OLD_DATA_NAMES[name]["estimate"]
    fit_data = _binary_scores() if name == "ConfidenceBasedEstimator" else _labels()
    use_data = (_binary_scores(seed=1) if name == "ConfidenceBasedEstimator" else _labels(seed=1))[1]
    det = cls(**kwargs).fit(*fit_data)
    new = det.estimate(use_data)
    with pytest.warns(DeprecationWarning, match=old_name):
        old = det.estimate(**{old_name: use_data})
    return new, old


@pytest.mark.parametrize("name", sorted(OLD_DATA_NAMES))
def test_old_data_argument_names_still_work_with_a_deprecation_warning(name):
    new, old = _positional_and_renamed(name)
    assert json.dumps(old.to_dict(), sort_keys=True) == json.dumps(new.to_dict(), sort_keys=True)
    verb, (old_name, new_name) = next(iter(OLD_DATA_NAMES[name].items()))
    with pytest.raises(TypeError, match="both"):
        getattr(getattr(detectors, name)(), verb)(**{old_name: None, new_name: None})


def _function_parameters():
    for name in detectors.__all__:
        fn = getattr(detectors, name)
        if inspect.isfunction(fn):
            yield name, list(inspect.signature(fn).parameters)


def test_exported_functions_name_their_data_reference_and_current():
    """One vocabulary across classes and functions: no exported function takes benchmark/production data."""
    old = {name: [p for p in params if "benchmark" in p or "production" in p]
           for name, params in _function_parameters()}
    assert not {name: params for name, params in old.items() if params}


_CELLS = (np.array([0, 0, 1, 1] * 25), np.array([0, 1, 1, 1] * 25))
_STRATA_FRAMES = (pd.DataFrame({"site": list("ab") * 20}), pd.DataFrame({"site": list("abb") * 10}))
_Y_SITE = np.array([0, 1] * 20)
_CONFUSION = ConfusionSummary.from_labels(*_labels(300, 2))
_PREDICTED = PredictionSummary.from_predictions(_labels(400, 2, seed=1)[1])
_ERRORS = (_context(400).site == "a").to_numpy(int) * (np.arange(400) % 2)
_DISCOVERED = detectors.discover_weak_slices(_context(400), _ERRORS)
# function -> (the call with the new names, the same call with the former names)
OLD_FUNCTION_NAMES = {
    "prior_shift_effect": ({"reference_prior": [0.5, 0.5], "current_prior": [0.6, 0.4]},
                           {"benchmark_prior": [0.5, 0.5], "production_prior": [0.6, 0.4]}),
    "attribute_performance": (
        {"reference_cells": _CELLS[0], "reference_values": np.ones(100), "current_cells": _CELLS[1],
         "current_values": np.r_[np.ones(50), np.zeros(50)], "n_bootstrap": 20},
        {"benchmark_cells": _CELLS[0], "benchmark_values": np.ones(100), "production_cells": _CELLS[1],
         "production_values": np.r_[np.ones(50), np.zeros(50)], "n_bootstrap": 20}),
    "context_cells": ({"reference": _STRATA_FRAMES[0], "current": _STRATA_FRAMES[1], "columns": ["site"]},
                      {"benchmark": _STRATA_FRAMES[0], "production": _STRATA_FRAMES[1], "columns": ["site"]}),
    "context_strata_cells": ({"reference": _STRATA_FRAMES[0], "current": _STRATA_FRAMES[1], "columns": ["site"]},
                             {"benchmark": _STRATA_FRAMES[0], "production": _STRATA_FRAMES[1], "columns": ["site"]}),
    "rank_context_columns": ({"reference": _STRATA_FRAMES[0], "current": _STRATA_FRAMES[1], "columns": ["site"]},
                             {"benchmark": _STRATA_FRAMES[0], "production": _STRATA_FRAMES[1], "columns": ["site"]}),
    "make_strata": ({"cells_reference": _CELLS[0], "cells_current": _CELLS[1]},
                    {"cells_benchmark": _CELLS[0], "cells_production": _CELLS[1]}),
    "window_drop_test": ({"reference_successes": 850, "reference_n": 1000, "window_successes": 150, "window_n": 240,
                          "level": 0.01},
                         {"benchmark_successes": 850, "benchmark_n": 1000, "window_successes": 150, "window_n": 240,
                          "level": 0.01}),
    "drop_start": ({"reference_successes": 760, "reference_n": 1000},
                   {"benchmark_successes": 760, "benchmark_n": 1000}),
    "summary_label_shift": ({"reference": _CONFUSION, "current": _PREDICTED},
                            {"benchmark": _CONFUSION, "production": _PREDICTED}),
    "label_shift_unexplained": (
        {"reference": _STRATA_FRAMES[0], "y_reference": _Y_SITE, "current": _STRATA_FRAMES[1],
         "weights": {"0": 1.0, "1": 1.0}, "columns": ["site"]},
        {"benchmark": _STRATA_FRAMES[0], "y_benchmark": _Y_SITE, "production": _STRATA_FRAMES[1],
         "weights": {"0": 1.0, "1": 1.0}, "columns": ["site"]}),
    "prune_discoveries": (
        {"discovered": _DISCOVERED, "reference": _context(400), "frame": _context(400), "errors": _ERRORS,
         "reported": [], "min_slice_size": 10},
        {"discovered": _DISCOVERED, "benchmark": _context(400), "frame": _context(400), "errors": _ERRORS,
         "reported": [], "min_slice_size": 10}),
}


def _same(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return json.dumps(to_jsonable(a), sort_keys=True) == json.dumps(to_jsonable(b), sort_keys=True)


@pytest.mark.parametrize("name", sorted(OLD_FUNCTION_NAMES))
def test_former_data_names_of_functions_warn_and_give_the_same_result(name):
    fn = getattr(detectors, name)
    new_kwargs, old_kwargs = OLD_FUNCTION_NAMES[name]
    renamed = sorted(set(old_kwargs) - set(new_kwargs))
    with pytest.warns(DeprecationWarning, match=rf"{name}\({renamed[0]}=\.\.\.\) is deprecated"):
        old = fn(**old_kwargs)
    assert _same(old, fn(**new_kwargs))
    both = {**new_kwargs, renamed[0]: old_kwargs[renamed[0]]}
    with pytest.raises(TypeError, match="both"):
        fn(**both)


def test_every_exported_function_that_renamed_its_data_has_a_case():
    renamed = {name for name, _ in _function_parameters()
               if any("benchmark" in old or "production" in old
                      for old in getattr(getattr(detectors, name), "renamed_parameters", {}))}
    assert renamed == set(OLD_FUNCTION_NAMES)


# function call with one bad parameter -> the parameter named in the message
FUNCTION_BAD_VALUES = [
    ("arl_threshold", lambda: detectors.arl_threshold(0.05, horizon=0), "horizon", 0),
    ("arl_threshold", lambda: detectors.arl_threshold(1.5, horizon=52), "alpha", 1.5),
    ("arl_threshold", lambda: detectors.arl_threshold(0.05, horizon=52, weight=0), "weight", 0),
    ("horizon_level", lambda: detectors.horizon_level(0, horizon=52), "alpha", 0),
    ("horizon_level", lambda: detectors.horizon_level(0.05, horizon=2.5), "horizon", 2.5),
    ("sr_start", lambda: detectors.sr_start(0), "n_alternatives", 0),
    ("shift_start", lambda: detectors.shift_start(0), "n_reference", 0),
    ("shift_start", lambda: detectors.shift_start(100, bets=(0.5, -1.0)), "bets[1]", -1.0),
    ("drop_start", lambda: detectors.drop_start(12, 10), "reference_successes", 12),
    ("drop_start", lambda: detectors.drop_start(5, 10, drops=(1.5,)), "drops[0]", 1.5),
    ("drop_update", lambda: detectors.drop_update(detectors.drop_start(5, 10), 8, 7), "successes", 8),
    ("window_drop_test", lambda: detectors.window_drop_test(850, 1000, 150, 240, level=0.6), "level", 0.6),
    ("window_drop_test", lambda: detectors.window_drop_test(850, 1000, 150, 240, level=0.01, floor=-1), "floor", -1),
    ("window_drop_test", lambda: detectors.window_drop_test(850, 0, 150, 240, level=0.01), "reference_n", 0),
    ("proportion_gain", lambda: detectors.proportion_gain(5, 4, 1, 2), "k1", 5),
    ("proportion_gain", lambda: detectors.proportion_gain(1, 4, 1, 0), "n2", 0),
]


@pytest.mark.parametrize("name, call, param, bad", FUNCTION_BAD_VALUES,
                         ids=[f"{n}-{p}" for n, _, p, _ in FUNCTION_BAD_VALUES])
def test_functions_refuse_bad_values_with_the_validation_message(name, call, param, bad):
    """The same message shape as the detectors' parameters: ``<name> must be <allowed>, got <value>.``"""
    with pytest.raises(detectors.DetectorInputError) as caught:
        call()
    assert str(caught.value).startswith(f"{param} must be ") and str(caught.value).endswith(f", got {bad!r}.")
