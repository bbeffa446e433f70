"""Density-ratio weights: the reweighted benchmark has production's distribution. SYNTHETIC data."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from detectors.density_ratio import density_ratio_weights, effective_size


def test_reweighted_benchmark_matches_a_shifted_mean_and_a_category_mix():
    rng = np.random.default_rng(1)
    bench = pd.DataFrame({"age": rng.normal(0, 1, 6000), "site": rng.choice(["a", "b"], 6000, p=[0.8, 0.2])})
    prod = pd.DataFrame({"age": rng.normal(0.6, 1, 6000), "site": rng.choice(["a", "b"], 6000, p=[0.5, 0.5])})
    w = density_ratio_weights(bench, prod, random_state=0)
    assert np.average(bench["age"], weights=w) == pytest.approx(0.6, abs=0.08)
    assert np.average(bench["site"] == "b", weights=w) == pytest.approx(0.5, abs=0.04)
    assert w.mean() == pytest.approx(1.0) and w.max() <= 20.0 + 1e-9


def test_no_shift_gives_near_uniform_weights():
    rng = np.random.default_rng(2)
    bench, prod = (pd.DataFrame({"x": rng.normal(0, 1, 3000)}) for _ in range(2))
    w = density_ratio_weights(bench, prod, random_state=0)
    assert effective_size(w) > 0.95 * len(w)


def test_a_share_that_the_inputs_explain_is_reproduced_and_one_they_do_not_is_not():
    """A context cut from age moves with age; a context independent of age does not."""
    rng = np.random.default_rng(3)
    age_b, age_p = rng.normal(40, 10, 5000), rng.normal(46, 10, 5000)
    w = density_ratio_weights(pd.DataFrame({"age": age_b}), pd.DataFrame({"age": age_p}), random_state=0)
    older_b, older_p = age_b >= 50, age_p >= 50
    assert np.average(older_b, weights=w) == pytest.approx(older_p.mean(), abs=0.02)
    other_b, other_p = rng.random(5000) < 0.2, rng.random(5000) < 0.35  # moved for another reason
    assert abs(np.average(other_b, weights=w) - other_p.mean()) > 0.1


def test_columns_must_match_and_empty_designs_give_none():
    with pytest.raises(ValueError):
        density_ratio_weights(pd.DataFrame({"a": [1.0]}), pd.DataFrame({"b": [1.0]}))
    assert density_ratio_weights(pd.DataFrame(index=range(3)), pd.DataFrame(index=range(3))) is None
