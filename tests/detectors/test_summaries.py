"""Mergeable summaries: merges are associative and commutative, have an identity and
equal the summary of the concatenated data (exact parts exactly, sketch CDFs within their rank error)."""
from __future__ import annotations

import pickle
from functools import reduce

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from detectors import DetectorInputError
from detectors.summaries import (
    DEFAULT_K,
    CategorySummary,
    ConfusionSummary,
    DatasetSummary,
    NumericSummary,
    PredictionSummary,
    category_key,
)

FLOATS = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")))
SMALL = settings(max_examples=60, deadline=None, derandomize=True)


def _chunks(frame: pd.DataFrame, parts: int) -> list[pd.DataFrame]:
    size = -(-len(frame) // parts)
    return [frame.iloc[i:i + size] for i in range(0, len(frame), size)]


def _merge_all(parts):
    return reduce(lambda a, b: a.merge(b), parts, type(parts[0]).empty())


def _assert_exact_parts(a: NumericSummary, values: np.ndarray) -> None:
    valid = values[~np.isnan(values)]
    assert (a.n, a.n_missing) == (valid.size, values.size - valid.size)
    if valid.size:
        assert a.mean == pytest.approx(valid.mean(), rel=1e-9, abs=1e-6)
        assert a.std == pytest.approx(valid.std(), rel=1e-7, abs=1e-6)
        assert (a.min, a.max) == (valid.min(), valid.max())


# ---------------------------------------------------------------- numeric
@SMALL
@given(st.lists(st.lists(FLOATS, max_size=40), min_size=1, max_size=5))
def test_numeric_merge_equals_summary_of_concatenation(chunks):
    parts = [NumericSummary.from_values(np.array(c, dtype=float)) for c in chunks]
    values = np.concatenate([np.array(c, dtype=float) for c in chunks])
    merged = _merge_all(parts)
    _assert_exact_parts(merged, values)
    valid = np.sort(values[~np.isnan(values)])
    if valid.size:  # few values: the sketch has not compacted, its CDF is the ECDF exactly
        assert merged.exact and merged.rank_error == 0.0
        assert np.array_equal(merged.cdf(valid), np.searchsorted(valid, valid, side="right") / valid.size)
        assert np.array_equal(merged.items(), np.unique(valid))


@SMALL
@given(st.lists(FLOATS, max_size=30), st.lists(FLOATS, max_size=30), st.lists(FLOATS, max_size=30))
def test_numeric_merge_is_associative_and_commutative(x, y, z):
    a, b, c = (NumericSummary.from_values(np.array(v, dtype=float)) for v in (x, y, z))
    left, right, swapped = a.merge(b).merge(c), a.merge(b.merge(c)), c.merge(a).merge(b)
    for other in (right, swapped):
        assert (other.n, other.n_missing, other.min, other.max) == (left.n, left.n_missing, left.min, left.max)
        assert other.mean == pytest.approx(left.mean, rel=1e-9, abs=1e-9)
        assert other.m2 == pytest.approx(left.m2, rel=1e-9, abs=1e-6)
        assert np.array_equal(other.items(), left.items())  # exact mode: the same retained values
    assert a.merge(NumericSummary.empty()) == a and NumericSummary.empty().merge(a) == a


def test_sketch_of_ten_partitions_is_within_its_rank_error_of_the_data():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=60_000), rng.exponential(3, size=40_000)])
    x[rng.random(x.size) < 0.02] = np.nan
    merged = _merge_all([NumericSummary.from_values(p) for p in np.array_split(x, 10)])
    _assert_exact_parts(merged, x)
    assert not merged.exact and merged.rank_error == pytest.approx(0.00278, abs=1e-5)
    valid = np.sort(x[~np.isnan(x)])
    grid = np.quantile(valid, np.linspace(0, 1, 2001))
    truth = np.searchsorted(valid, grid, side="right") / valid.size
    assert np.abs(merged.cdf(grid) - truth).max() <= merged.rank_error
    qs = np.linspace(0.01, 0.99, 99)
    ranks = np.searchsorted(valid, merged.quantiles(qs), side="right") / valid.size
    assert np.abs(ranks - qs).max() <= merged.rank_error + 1 / valid.size


def test_sketch_error_over_every_point_stays_below_the_documented_bound():
    """The module doc uses eps(k, False) as a bound on sup_x |F_sketch - F|; check it on 30 trials."""
    rng = np.random.default_rng(4)
    worst = []
    for trial in range(30):
        x = rng.normal(size=30_000) if trial % 2 else rng.integers(0, 300, 30_000).astype(float)
        merged = _merge_all([NumericSummary.from_values(p) for p in np.array_split(x, 1 + trial % 7)])
        xs = np.sort(x)
        items = merged.items()
        f_hat = merged.cdf(items)
        at = np.searchsorted(xs, items, side="right") / x.size
        before_next = np.append(np.searchsorted(xs, items[1:], side="left") / x.size, 1.0)
        worst.append(max(np.abs(f_hat - at).max(), np.abs(f_hat - before_next).max(),
                         np.searchsorted(xs, items[0], side="left") / x.size))
    assert max(worst) <= merged.rank_error, worst  # measured: max about 0.0018 against 0.00278


def test_infinite_values_are_an_error_as_in_memory_and_nan_is_missing():
    with pytest.raises(DetectorInputError, match="Infinite values in column 'x'"):
        NumericSummary.from_values(np.array([1.0, np.inf]), name="x")
    s = NumericSummary.from_values(pd.Series([1.0, None, 3.0]))
    assert (s.n, s.n_missing, s.mean, s.var) == (2, 1, 2.0, 1.0)
    only_missing = NumericSummary.from_values(np.full(4, np.nan))
    assert only_missing.n == 0 and np.isnan(only_missing.std) and np.isnan(only_missing.cdf([0.0])).all()
    assert only_missing.merge(s).n_missing == 5


# ---------------------------------------------------------------- categories
CATS = st.lists(st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.none()), max_size=40)


@SMALL
@given(CATS, CATS, CATS)
def test_category_merge_is_exact_associative_and_commutative(x, y, z):
    a, b, c = (CategorySummary.from_values(pd.Series(v, dtype=object)) for v in (x, y, z))
    whole = CategorySummary.from_values(pd.Series(x + y + z, dtype=object))
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == c.merge(b).merge(a) == whole
    assert a.merge(CategorySummary.empty()) == a
    assert whole.n + whole.n_missing == len(x + y + z)


def test_category_keys_agree_across_partition_dtypes():
    ints = CategorySummary.from_values(pd.Series([1, 2, 2]))
    floats = CategorySummary.from_values(pd.Series([1.0, np.nan, 2.0]))  # an int column with a NaN
    merged = ints.merge(floats)
    assert merged.mapping == {"1": 2, "2": 3} and merged.n_missing == 1
    assert CategorySummary.from_values(pd.Series([True, False, True])).mapping == {"False": 1, "True": 2}
    assert [category_key(v) for v in (np.int64(3), 0.5, np.float32(2.0), "x")] == ["3", "0.5", "2", "x"]
    series = merged.to_series()
    assert series.index.dtype == object and series.to_dict() == {"1": 2, "2": 3}


# ---------------------------------------------------------------- outcomes
def _labels(rng, n, k=3):
    y = rng.integers(0, k, n)
    return y, np.where(rng.random(n) < 0.8, y, rng.integers(0, k, n))


def test_confusion_of_ten_partitions_equals_one_pass():
    rng = np.random.default_rng(5)
    y, yhat = _labels(rng, 10_000)
    whole = ConfusionSummary.from_labels(y, yhat)
    parts = [ConfusionSummary.from_labels(a, b, n_bootstrap=50, random_state=(7, i))
             for i, (a, b) in enumerate(zip(np.array_split(y, 10), np.array_split(yhat, 10)))]
    merged = _merge_all(parts)
    assert merged.classes == whole.classes == (0, 1, 2)
    assert np.array_equal(merged.counts, whole.counts) and merged.n == 10_000
    assert merged.replicates.shape == (50, 3, 3) and merged.n_bootstrap == 50
    totals = merged.replicates.sum(axis=(1, 2))  # Poisson bootstrap: the total is Poisson(n)
    assert abs(totals.mean() - 10_000) < 4 * np.sqrt(10_000 / 50)
    assert not np.array_equal(parts[0].replicates, parts[1].replicates), "independent partition streams"
    again = ConfusionSummary.from_labels(*[np.array_split(a, 10)[0] for a in (y, yhat)], n_bootstrap=50,
                                         random_state=(7, 0))
    assert again == parts[0], "deterministic under the seed"


def test_confusion_merge_unions_classes_and_is_associative_and_commutative():
    a = ConfusionSummary.from_labels(["cat", "dog"], ["cat", "cat"], n_bootstrap=4, random_state=(0, 0))
    b = ConfusionSummary.from_labels(["owl"], ["dog"], n_bootstrap=4, random_state=(0, 1))
    c = ConfusionSummary.from_labels(["dog", "dog"], ["dog", "owl"], n_bootstrap=4, random_state=(0, 2))
    left = a.merge(b).merge(c)
    assert left == a.merge(b.merge(c)) == c.merge(a).merge(b) == b.merge(c).merge(a)
    assert left.classes == ("cat", "dog", "owl")
    assert left.counts.tolist() == [[1, 0, 0], [1, 1, 1], [0, 1, 0]]
    assert ConfusionSummary.empty().merge(left) == left == left.merge(ConfusionSummary.empty())
    assert not left.counts.flags.writeable
    restored = pickle.loads(pickle.dumps(left))
    assert restored == left and not restored.counts.flags.writeable and not restored.replicates.flags.writeable
    with pytest.raises(DetectorInputError, match="bootstrap replicates"):
        a.merge(ConfusionSummary.from_labels(["cat"], ["cat"]))


def test_prediction_summary_and_reindexing():
    preds = PredictionSummary.from_predictions(["b", "a", "b"], n_bootstrap=3, random_state=1)
    assert preds.classes == ("a", "b") and preds.counts.tolist() == [1, 2]
    wide = preds.reindexed(("a", "b", "c"))
    assert wide.counts.tolist() == [1, 2, 0] and wide.replicates.shape == (3, 3)
    assert wide.replicates[:, :2].tolist() == preds.replicates.tolist()
    with pytest.raises(DetectorInputError, match=r"unseen in the benchmark: \['b'\]"):
        preds.reindexed(("a",), what="production")
    cm = ConfusionSummary.from_labels([0, 1, 1], [1, 1, 0], n_bootstrap=2)
    assert cm.predictions().counts.tolist() == [1, 2]
    assert np.array_equal(cm.predictions().replicates, cm.replicates.sum(axis=1))


# ---------------------------------------------------------------- datasets
def test_dataset_summary_of_ten_partitions_equals_one_pass(make_mixed):
    frame = make_mixed(np.random.default_rng(6), 5_000)
    numeric = [f"x{i}" for i in range(14)] + ["count"]
    categorical = ["code", "c0", "c1", "c2", "flag"]
    whole = DatasetSummary.from_frame(frame, numeric=numeric, categorical=categorical)
    parts = [DatasetSummary.from_frame(p, numeric=numeric, categorical=categorical,
                                       outcomes={"overall": ConfusionSummary.from_labels(p["code"], p["code"])})
             for p in _chunks(frame, 10)]
    merged = _merge_all(parts)
    assert merged.n_rows == 5_000 and list(merged.columns) == list(whole.columns)
    for name in categorical:
        assert merged.columns[name] == whole.columns[name]
    for name in numeric:
        _assert_exact_parts(merged.columns[name], frame[name].to_numpy(dtype=float))
        assert merged.columns[name].k == DEFAULT_K and merged.columns[name].rank_error > 0
    assert merged.outcomes["overall"].n == 5_000
    restored = DatasetSummary.from_bytes(merged.to_bytes())
    assert restored == merged and pickle.loads(pickle.dumps(merged)) == merged
    with pytest.raises(TypeError):
        merged.columns["x0"] = None  # read-only mapping
    with pytest.raises(DetectorInputError, match="different columns"):
        merged.merge(DatasetSummary.from_frame(frame, numeric=["x0"]))
