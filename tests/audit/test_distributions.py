"""feature_distributions: every row accounted for, shared bins, bounded and JSON-ready output."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audit.pipeline.distributions import feature_distributions


def _frames(n_b=3_000, n_p=5_000, seed=0):
    rng = np.random.default_rng(seed)
    b = pd.DataFrame({"x": rng.standard_t(2, n_b), "k": rng.choice(list("abcdefghijklmnop"), n_b),
                      "flag": rng.random(n_b) < 0.3, "const": np.ones(n_b)})
    p = pd.DataFrame({"x": rng.standard_t(2, n_p) + 1, "k": rng.choice(list("abcdefghijklmnopqrstuvwxyz"), n_p),
                      "flag": rng.random(n_p) < 0.6, "const": np.ones(n_p)})
    b.loc[::50, "x"] = np.nan
    p.loc[::40, "k"] = None
    return b, p


def test_numeric_counts_account_for_every_row_on_shared_bins():
    b, p = _frames()
    d = feature_distributions(b, p, ["x"])["x"]
    assert d["type"] == "numeric" and len(d["edges"]) == len(d["benchmark"]) + 1 <= 21
    assert d["edges"] == sorted(d["edges"])
    for side, frame in (("benchmark", b), ("production", p)):
        total = sum(d[side]) + d["below"][side] + d["above"][side] + d["missing"][side]
        assert total == d["n"][side] == len(frame)
    # heavy tails (t with 2 df) are counted apart instead of stretching the bins
    assert 0 < d["below"]["production"] + d["above"]["production"] < 0.02 * len(p)


def test_categorical_keeps_the_top_categories_and_pools_the_rest():
    b, p = _frames()
    d = feature_distributions(b, p, ["k"], max_categories=5)["k"]
    assert d["type"] == "categorical" and len(d["categories"]) == 5
    for side, frame in (("benchmark", b), ("production", p)):
        assert sum(d[side]) + d["other"][side] + d["missing"][side] == len(frame)
    assert d["missing"]["production"] == p["k"].isna().sum()


def test_booleans_and_constants_are_summarised():
    b, p = _frames()
    d = feature_distributions(b, p, ["flag", "const"])
    assert d["flag"]["type"] == "categorical" and set(d["flag"]["categories"]) == {"True", "False"}
    assert d["const"]["type"] == "numeric" and sum(d["const"]["benchmark"]) == len(b)


def test_output_is_small_json_on_wide_data():
    rng = np.random.default_rng(1)
    wide_b = pd.DataFrame(rng.normal(size=(500, 1_000)), columns=[f"f{i}" for i in range(1_000)])
    wide_p = pd.DataFrame(rng.normal(size=(500, 1_000)), columns=[f"f{i}" for i in range(1_000)])
    wide_b["name"] = ["x" * 10_000 + str(i) for i in range(500)]  # huge category names
    wide_p["name"] = wide_b["name"]
    d = feature_distributions(wide_b, wide_p, list(wide_b.columns))
    text = json.dumps(d, allow_nan=False)
    assert len(d) == 1_001 and len(text) < 1_000 * 1_000  # < 1 kB per column
    assert max(len(c) for c in d["name"]["categories"]) <= 80


def test_missing_columns_are_skipped_and_empty_columns_do_not_fail():
    b = pd.DataFrame({"x": [np.nan, np.nan], "only_b": [1, 2]})
    p = pd.DataFrame({"x": [np.nan], "only_p": [1]})
    d = feature_distributions(b, p, ["x", "only_b", "only_p", "absent"])
    assert list(d) == ["x"] and d["x"]["benchmark"] == [] and d["x"]["missing"] == {"benchmark": 2, "production": 1}


@pytest.mark.parametrize("kwargs", [{"max_bins": 0}, {"max_categories": -1}, {"max_label": 2.5}, {"max_bins": True}])
def test_parameters_are_validated_by_name(kwargs):
    b, p = _frames(10, 10)
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        feature_distributions(b, p, ["x"], **kwargs)
