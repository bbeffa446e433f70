"""Synthetic frames for the detector tests. Every shift made here is synthetic."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

LEVELS = np.array(["a", "b", "c", "d", "e"], dtype=object)
LEVEL_SHARES = [0.4, 0.3, 0.2, 0.07, 0.03]


def mixed_frame(rng: np.random.Generator, n: int, shift: float = 0.0) -> pd.DataFrame:
    """20 columns like a real table: 15 continuous (one skewed), a discrete count, a 4-level
    code, three categorical columns with rare levels, a boolean; missing values in four.

    ``shift`` moves the mean of ``x0`` by that many standard deviations.
    """
    data = {f"x{i}": rng.normal(size=n) for i in range(14)}
    data["x0"] = data["x0"] + shift
    data["x1"] = rng.exponential(size=n)
    data["count"] = rng.poisson(3, n).astype(float)  # ties; tested as numeric
    data["code"] = rng.integers(0, 4, n).astype(float)  # 4 values: tested as categorical
    for i in range(3):
        data[f"c{i}"] = rng.choice(LEVELS, n, p=LEVEL_SHARES)
    data["flag"] = rng.random(n) < 0.3
    frame = pd.DataFrame(data)
    for column, rate in (("x2", 0.05), ("x3", 0.05), ("c0", 0.05), ("x4", 0.01)):
        frame.loc[rng.random(n) < rate, column] = np.nan
    return frame


def numeric_frame(rng: np.random.Generator, n: int, p: int = 20, shift: float = 0.0) -> pd.DataFrame:
    """``p`` independent standard normal columns; ``shift`` sigma added to ``x0``."""
    values = rng.normal(size=(n, p))
    values[:, 0] += shift
    return pd.DataFrame(values, columns=[f"x{i}" for i in range(p)])


@pytest.fixture
def make_mixed():
    return mixed_frame


@pytest.fixture
def make_numeric():
    return numeric_frame
