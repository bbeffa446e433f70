"""One set of names across the detectors: the data are ``reference`` and ``current`` everywhere (the
classes' verbs and the functions), the former names (``benchmark``/``production``, ``n_boot``, ``seed``,
``method``) still work with a ``DeprecationWarning``, and a bad value is refused with one message shape.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import detectors
from detectors import Outcomes
from detectors.assumptions import class_conditional_unexplained
from detectors.base import ShiftTest, to_jsonable
from detectors.context_tests import rarity_pvalue, rarity_test, untested_ranges, untested_values
from detectors.density_ratio import density_ratio_weights, domain_scores
from detectors.e_detector import shared_log_ratios, shared_start, shared_update
from detectors.reweighted import category_codes, mix_retest, numeric_retest, share_retest
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


# -- the modules' own public functions (and the classes' public methods), beyond ``detectors.__all__`` --

# a parameter named for the former data names: benchmark*, production*, *_benchmark, *_production
_FORMER_NAME = re.compile(r"^(benchmark|production)|_(benchmark|production)$")


def _public_callables():
    """Every public function of a ``detectors`` module and every public method of its classes
    (the fields of dataclasses, i.e. of results, are stored JSON and keep their names)."""
    for info in pkgutil.iter_modules(detectors.__path__):
        module = importlib.import_module(f"detectors.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and not (attr == "__init__" and not dataclasses.is_dataclass(obj)):
                        continue
                    fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                    if inspect.isfunction(fn):
                        yield f"{module.__name__}.{name}.{attr}", fn


def test_no_public_function_of_the_package_takes_benchmark_or_production_names():
    """The modules' helpers (``domain_scores``, ``share_retest``, ``rarity_pvalue``, ...) speak the same
    vocabulary as the exported API; the former names live on only in ``renamed_parameters``."""
    found = {where: [p for p in inspect.signature(fn).parameters if _FORMER_NAME.search(p)]
             for where, fn in _public_callables()}
    assert len(found) > 100  # the walk does reach the modules
    assert not {where: params for where, params in found.items() if params}


def _estimator():
    return detectors.LabelShiftEstimator(n_bootstrap=20).fit(*_labels())


_RNG = np.random.default_rng(7)
_FRAMES = (pd.DataFrame({"age": _RNG.normal(0, 1, 150), "site": _RNG.choice(list("ab"), 150)}),
           pd.DataFrame({"age": _RNG.normal(0.5, 1, 120), "site": _RNG.choice(list("abb"), 120)}))
_Y_FRAMES = (_RNG.integers(0, 2, 150), _RNG.integers(0, 2, 120))
_W = _RNG.uniform(0.5, 1.5, 150)
_CATS = (_RNG.choice(list("xyz"), 150), _RNG.choice(list("xyzz"), 120))
_NUMS = (_RNG.normal(0, 1, 150), _RNG.normal(0.3, 1, 120))
_UNTESTED = untested_values("site", pd.Series({"a": 50}), pd.Series({"a": 40, "b": 12}), 52, min_slice_size=10,
                            min_production_count=5, max_listed=3)[0]
_SHARED = shared_update(shared_update(shared_start(), 0.4, 2.0), 1.1, 2.0)
_PRED_COUNTS = np.bincount(_labels(seed=1)[1], minlength=3)
_JOINT_REPS = _RNG.poisson(_estimator().joint_counts_, size=(20, 3, 3))
_PRED_REPS = _RNG.poisson(_PRED_COUNTS, size=(20, 3))
_EVAL = (_slices(_context(), _context(seed=1)), Outcomes(_labels(200, 2)[1], _labels(200, 2)[0]),
         Outcomes(_labels(200, 2, 1)[1], _labels(200, 2, 1)[0]))

# where -> (the function or method, its call with the new names, the same call with the former names);
# calls take fresh arguments (a random generator is used up by a call)
OLD_MODULE_NAMES = {
    "assumptions.class_conditional_unexplained": (
        lambda: class_conditional_unexplained,
        lambda: {"reference": _FRAMES[0], "y_reference": _Y_FRAMES[0], "current": _FRAMES[1],
                 "y_current": _Y_FRAMES[1], "columns": ["age", "site"], "min_rows": 10},
        lambda: {"benchmark": _FRAMES[0], "y_benchmark": _Y_FRAMES[0], "production": _FRAMES[1],
                 "y_production": _Y_FRAMES[1], "columns": ["age", "site"], "min_rows": 10}),
    "density_ratio.domain_scores": (
        lambda: domain_scores,
        lambda: {"reference": _FRAMES[0], "current": _FRAMES[1], "random_state": 0},
        lambda: {"benchmark": _FRAMES[0], "production": _FRAMES[1], "random_state": 0}),
    "density_ratio.density_ratio_weights": (
        lambda: density_ratio_weights,
        lambda: {"reference": _FRAMES[0], "current": _FRAMES[1], "clip": 5.0},
        lambda: {"benchmark": _FRAMES[0], "production": _FRAMES[1], "clip": 5.0}),
    "reweighted.category_codes": (
        lambda: category_codes,
        lambda: {"reference": _CATS[0], "current": _CATS[1]},
        lambda: {"benchmark": _CATS[0], "production": _CATS[1]}),
    "reweighted.mix_retest": (
        lambda: mix_retest,
        lambda: {"w": _W, "reference": _CATS[0], "current": _CATS[1], "floor": 0.1},
        lambda: {"w": _W, "benchmark": _CATS[0], "production": _CATS[1], "floor": 0.1}),
    "reweighted.numeric_retest": (
        lambda: numeric_retest,
        lambda: {"w": _W, "reference": _NUMS[0], "current": _NUMS[1], "floor": 0.1},
        lambda: {"w": _W, "benchmark": _NUMS[0], "production": _NUMS[1], "floor": 0.1}),
    "reweighted.share_retest": (
        lambda: share_retest,
        lambda: {"w": _W, "in_reference": _NUMS[0] > 0.5, "in_current": _NUMS[1] > 0.5, "floor": 0.05},
        lambda: {"w": _W, "in_benchmark": _NUMS[0] > 0.5, "in_production": _NUMS[1] > 0.5, "floor": 0.05}),
    "context_tests.rarity_pvalue": (
        lambda: rarity_pvalue,
        lambda: {"k_reference": [0, 3], "k_current": [12, 9], "n_reference": 500, "n_current": 400},
        lambda: {"k_benchmark": [0, 3], "k_production": [12, 9], "n_benchmark": 500, "n_production": 400}),
    "context_tests.rarity_test": (
        lambda: rarity_test,
        lambda: {"u": _UNTESTED, "n_reference": 50, "n_current": 52, "floor": 0.05},
        lambda: {"u": _UNTESTED, "n_benchmark": 50, "n_production": 52, "floor": 0.05}),
    "context_tests.untested_ranges": (
        lambda: untested_ranges,
        lambda: {"name": "age", "reference": np.sort(_NUMS[0]), "values": pd.Series(_NUMS[1] + 2.0),
                 "n_current": 120, "min_samples": 10, "min_count": 5, "min_slice_size": 10, "floor": 0.05},
        lambda: {"name": "age", "reference": np.sort(_NUMS[0]), "values": pd.Series(_NUMS[1] + 2.0),
                 "n_production": 120, "min_samples": 10, "min_count": 5, "min_slice_size": 10, "floor": 0.05}),
    "context_tests.untested_values": (
        lambda: untested_values,
        lambda: {"name": "site", "reference": pd.Series({"a": 50}), "counts": pd.Series({"a": 40, "b": 12}),
                 "n_current": 52, "min_slice_size": 10, "min_production_count": 5, "max_listed": 3},
        lambda: {"name": "site", "reference": pd.Series({"a": 50}), "counts": pd.Series({"a": 40, "b": 12}),
                 "n_production": 52, "min_slice_size": 10, "min_production_count": 5, "max_listed": 3}),
    "e_detector.shared_log_ratios": (
        lambda: shared_log_ratios,
        lambda: {"state": _SHARED, "shifts": [0.5, 1.0], "reference_precision": 40.0},
        lambda: {"state": _SHARED, "shifts": [0.5, 1.0], "benchmark_precision": 40.0}),
    "label_shift.LabelShiftEstimator.bootstrap_priors": (
        lambda: _estimator().bootstrap_priors,
        lambda: {"mu": _PRED_COUNTS / _PRED_COUNTS.sum(), "n_current": 300, "rows": None,
                 "rng": np.random.default_rng(0)},
        lambda: {"mu": _PRED_COUNTS / _PRED_COUNTS.sum(), "n_production": 300, "rows": None,
                 "rng": np.random.default_rng(0)}),
    "label_shift_counts.CountsFitting.estimate_counts": (
        lambda: _estimator().estimate_counts,
        lambda: {"current_counts": _PRED_COUNTS, "joint_replicates": _JOINT_REPS, "current_replicates": _PRED_REPS},
        lambda: {"production_counts": _PRED_COUNTS, "joint_replicates": _JOINT_REPS,
                 "production_replicates": _PRED_REPS}),
    "slices.SliceEvaluator.evaluate": (
        lambda: detectors.SliceEvaluator().evaluate,
        lambda: {"slices": _EVAL[0], "reference": _EVAL[1], "current": _EVAL[2]},
        lambda: {"slices": _EVAL[0], "benchmark": _EVAL[1], "production": _EVAL[2]}),
}


@pytest.mark.parametrize("where", sorted(OLD_MODULE_NAMES))
def test_module_functions_take_the_new_names_and_warn_for_the_former(where):
    get, new_kwargs, old_kwargs = OLD_MODULE_NAMES[where]
    fn = get()
    params = set(inspect.signature(fn).parameters)
    renamed = sorted(set(old_kwargs()) - set(new_kwargs()))
    assert set(new_kwargs()) <= params and not set(renamed) & params, (sorted(params), renamed)
    new = fn(**new_kwargs())
    for old_name in renamed:  # each former name on its own, the other arguments by their new names
        new_name = fn.renamed_parameters[old_name]
        kwargs = {k: v for k, v in new_kwargs().items() if k != new_name} | {old_name: old_kwargs()[old_name]}
        with pytest.warns(DeprecationWarning, match=rf"\({old_name}=\.\.\.\) is deprecated; use {new_name}="):
            assert _same(get()(**kwargs), new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = get()(**old_kwargs())
    assert _same(old, new)
    with pytest.raises(TypeError, match="both"):
        get()(**{**new_kwargs(), renamed[0]: old_kwargs()[renamed[0]]})


def test_every_module_function_that_renamed_its_data_has_a_case():
    """Each function or method that still accepts a former data name is run through a case here, in
    ``OLD_FUNCTION_NAMES`` (exported functions) or ``OLD_DATA_NAMES`` (the detectors' verbs)."""
    renamed = {where.removeprefix("detectors.") for where, fn in _public_callables()
               if any(_FORMER_NAME.search(old) for old in getattr(fn, "renamed_parameters", {}))}
    exported = {f"{getattr(detectors, name).__module__.removeprefix('detectors.')}.{name}"
                for name in OLD_FUNCTION_NAMES}
    verbs = {f"{getattr(detectors, cls).__module__.removeprefix('detectors.')}.{cls}.{verb}"
             for cls, names in OLD_DATA_NAMES.items() for verb in names}
    assert renamed - exported - verbs == set(OLD_MODULE_NAMES) - exported - verbs
    assert set(OLD_MODULE_NAMES) <= renamed
