"""One set of names across the detectors: the data are ``reference`` and ``current`` everywhere (the
classes' verbs and the functions), the former names (``benchmark``/``production``, ``n_boot``, ``seed``,
``method``) still work with a ``DeprecationWarning``, and a bad value is refused with one message shape.
"""
from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest

import detectors
from detectors import Outcomes
from detectors.base import ShiftTest, to_jsonable
from detectors.sketch_tests import ConfusionSummary, PredictionSummary
from tests.detectors.api_cases import CASES, ESTIMATORS, _binary_scores, _context, _labels, _slices


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
