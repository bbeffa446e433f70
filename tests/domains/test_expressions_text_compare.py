"""A text column compared with a text literal: the fast element-wise path gives the Series
comparison's booleans, missing values included (they are neither equal nor unequal)."""
from __future__ import annotations

import operator

import numpy as np
import pandas as pd
import pytest

from domains.expressions import evaluate


@pytest.mark.parametrize("op", ["==", "!="])
def test_text_equality_equals_the_series_comparison_with_missing_values(op):
    rng = np.random.default_rng(0)
    values = np.array(rng.choice(["trunk", "head_neck", "acral"], 2_000), dtype=object)
    values[rng.random(2_000) < 0.1] = None
    values[rng.random(2_000) < 0.1] = np.nan
    frame = pd.DataFrame({"body_site": values})
    got = evaluate(f'body_site {op} "trunk"', frame).to_numpy()
    series = frame["body_site"]
    expected = getattr(operator, "eq" if op == "==" else "ne")(series, "trunk").fillna(False).to_numpy(bool)
    assert np.array_equal(got, expected & series.notna().to_numpy())


def test_text_equality_with_pandas_na_values_falls_back_to_the_series_comparison():
    frame = pd.DataFrame({"site": pd.Series(["a", pd.NA, "b"], dtype=object)})
    assert evaluate('site == "a"', frame).tolist() == [True, False, False]
    assert evaluate('site != "a"', frame).tolist() == [False, False, True]
