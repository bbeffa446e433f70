"""SYNTHETIC changes planted in production frames of real tables (shared by planted truths and batches)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.claims_calibration.tables import PreparedTable, rescore
from domains import evaluate

__all__ = ["flip_in_slice", "flip_random_in_slice", "offset_column", "tilt_rows", "oversample_slice"]


def flip_in_slice(table: PreparedTable, frame: pd.DataFrame, expression: str, points: float,
                  rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with ``points`` (a share of the slice's rows) of the slice's correctly predicted rows given
    another class as label: the slice's accuracy drops by about ``points``; other rows are unchanged."""
    out = frame.reset_index(drop=True).copy()
    inside = evaluate(expression, out).to_numpy()
    correct = np.flatnonzero(inside & (out["label"] == out["prediction"]).to_numpy())
    flip = rng.choice(correct, min(len(correct), int(round(points * inside.sum()))), replace=False)
    others = {c: [o for o in table.classes if o != c] for c in table.classes}
    out.loc[flip, "label"] = [others[c][int(rng.integers(len(others[c])))] for c in out.loc[flip, "label"]]
    return out


def offset_column(table: PreparedTable, frame: pd.DataFrame, column: str, sd: float) -> pd.DataFrame:
    """``frame`` with ``column`` moved by ``sd`` pool standard deviations (integer columns by a whole
    number, at least 1, so that the move is not told apart by fractional values alone); when the model
    uses the column its outputs are recomputed (the model sees the moved inputs)."""
    out = frame.copy()
    values = table.pool[column].astype(float)
    offset = sd * float(values.std())
    if np.all(np.mod(values, 1) == 0):  # an integer column (a year, a count) stays on its integers
        offset = max(1.0, round(offset))
    out[column] = out[column].astype(float) + offset
    return rescore(table, out) if column in table.source.model_columns else out


def tilt_rows(table: PreparedTable, column: str, strength: float, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` pool rows drawn with weights ``exp(strength * z)`` (``z``: ``column`` standardised), so the
    column's mean moves by about ``strength`` sd while each row keeps its own label and model output
    (a covariate shift that leaves the labelling given the inputs unchanged)."""
    values = table.pool[column].astype(float).to_numpy()
    z = (values - values.mean()) / values.std()
    weights = np.exp(strength * np.clip(z, -4, 4))
    rows = rng.choice(len(values), n, replace=len(values) < 3 * n, p=weights / weights.sum())
    return table.pool.iloc[rows].reset_index(drop=True)


def flip_random_in_slice(table: PreparedTable, frame: pd.DataFrame, expression: str, share: float,
                         rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with ``share`` of the slice's rows, drawn at random, given another class as label (label
    noise in one context: P(y | x) changed there and only there)."""
    out = frame.reset_index(drop=True).copy()
    inside = np.flatnonzero(evaluate(expression, out).to_numpy())
    flip = rng.choice(inside, int(round(share * len(inside))), replace=False)
    others = {c: [o for o in table.classes if o != c] for c in table.classes}
    out.loc[flip, "label"] = [others[c][int(rng.integers(len(others[c])))] for c in out.loc[flip, "label"]]
    return out


def oversample_slice(table: PreparedTable, expression: str, factor: float, n: int,
                     rng: np.random.Generator) -> pd.DataFrame:
    """``n`` pool rows drawn with the slice's rows ``factor`` times as likely: its share grows, every row
    stays a real (inputs, label, output) triple."""
    inside = evaluate(expression, table.pool).to_numpy()
    weights = np.where(inside, factor, 1.0)
    rows = rng.choice(len(weights), n, replace=len(weights) < 3 * n, p=weights / weights.sum())
    return table.pool.iloc[rows].reset_index(drop=True)
