"""The cases every exported detector and estimator is run through (``test_api_contract.py``,
``test_api_names.py``): fast valid parameters, how to fit and use each, and the values each parameter
must refuse."""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

import detectors
from detectors import Outcomes

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
