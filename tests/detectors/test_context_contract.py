"""Contract checks run on every context-side detector: the same rules for all (river style)."""
import dataclasses
import inspect
import json

import numpy as np
import pandas as pd
import pytest

import detectors
from detectors import (
    ConditionalShiftDetector,
    ContextShiftDetector,
    EmbeddingShiftDetector,
    Outcomes,
    SliceEvaluator,
    attribute_performance,
    discover_weak_slices,
)

CLASSES = [ContextShiftDetector, SliceEvaluator, ConditionalShiftDetector, EmbeddingShiftDetector]


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    ctx = pd.DataFrame({"site": rng.choice(["a", "b", "c"], n), "age": rng.normal(50, 10, n)})
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < 0.85, y, 1 - y)
    return ctx, y, pred, rng.normal(size=(n, 3))


def _run(cls, seed=0):
    ctx_b, yb, pb, eb = _data(seed)
    ctx_p, yp, pp, ep = _data(seed + 1)
    if cls is ContextShiftDetector:
        return cls().fit(ctx_b).test(ctx_p,
                                     slices={"a": ((ctx_b.site == "a").to_numpy(), (ctx_p.site == "a").to_numpy())})
    if cls is SliceEvaluator:
        return cls().fit(Outcomes(pb, yb)).test(
            Outcomes(pp, yp), slices={"a": ((ctx_b.site == "a").to_numpy(), (ctx_p.site == "a").to_numpy())})
    if cls is ConditionalShiftDetector:
        return cls(n_permutations=20).fit(ctx_b[["age"]], pd.factorize(ctx_b.site, sort=True)[0]).test(
            ctx_p[["age"]], pd.factorize(ctx_p.site, sort=True)[0])
    return cls(n_permutations=20, max_samples=100, n_clusters=3).fit(eb).test(ep, context=ctx_p)


@pytest.mark.parametrize("cls", CLASSES)
def test_parameters_are_keyword_only_and_stored_as_given(cls):
    params = inspect.signature(cls.__init__).parameters
    named = [p for p in params.values() if p.name != "self"]
    assert named and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in named)
    assert "random_state" in params and "alpha" in params
    sentinel = {p.name: object() for p in named}
    det = cls(**sentinel)  # no validation in __init__
    assert all(getattr(det, name) is value for name, value in sentinel.items())


@pytest.mark.parametrize("cls", CLASSES)
def test_results_are_frozen_json_ready_and_deterministic(cls):
    first, second = _run(cls), _run(cls)
    assert dataclasses.is_dataclass(first)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(first, dataclasses.fields(first)[0].name, None)
    text = json.dumps(first.to_dict(), allow_nan=False)
    assert text == json.dumps(second.to_dict(), allow_nan=False)
    for field in dataclasses.fields(first):
        assert not isinstance(getattr(first, field.name), (list, np.ndarray)), field.name  # tuples, not lists


@pytest.mark.parametrize("cls", CLASSES)
def test_tests_are_shift_test_records_with_the_decision_rule(cls):
    result = _run(cls)
    tests = result.tests
    assert tests and all(isinstance(t, detectors.base.ShiftTest) for t in tests)
    for t in tests:
        if t.status == "ok":
            assert 0 <= t.p_value <= 1 and t.p_value <= t.p_value_adjusted + 1e-12
            assert t.drifted == bool(t.p_value_adjusted < 0.05 and abs(t.effect_size) >= t.effect_floor)
        else:
            assert np.isnan(t.p_value) and not t.drifted


def test_functions_are_keyword_only_after_the_data():
    for fn in (attribute_performance, discover_weak_slices):
        params = inspect.signature(fn).parameters.values()
        data = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert all(p.default is inspect.Parameter.empty or p.name == "current_values" for p in data)


def test_exports_are_registered_explicitly():
    for name in ("ContextShiftDetector", "SliceEvaluator", "ConditionalShiftDetector", "EmbeddingShiftDetector",
                 "discover_weak_slices", "attribute_performance", "context_cells"):
        assert name in detectors.__all__ and hasattr(detectors, name)
