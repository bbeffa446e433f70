"""SYNTHETIC changes planted in production frames of real tables (shared by planted truths and batches)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.claims_calibration.tables import PreparedTable, rescore

__all__ = ["flip_in_slice", "offset_column"]


def flip_in_slice(table: PreparedTable, frame: pd.DataFrame, expression: str, points: float,
                  rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with ``points`` (a share of the slice's rows) of the slice's correctly predicted rows given
    another class as label: the slice's accuracy drops by about ``points``; other rows are unchanged."""
    from domains import evaluate

    out = frame.reset_index(drop=True).copy()
    inside = evaluate(expression, out).to_numpy()
    correct = np.flatnonzero(inside & (out["label"] == out["prediction"]).to_numpy())
    flip = rng.choice(correct, min(len(correct), int(round(points * inside.sum()))), replace=False)
    others = {c: [o for o in table.classes if o != c] for c in table.classes}
    out.loc[flip, "label"] = [others[c][int(rng.integers(len(others[c])))] for c in out.loc[flip, "label"]]
    return out


def offset_column(table: PreparedTable, frame: pd.DataFrame, column: str, sd: float) -> pd.DataFrame:
    """``frame`` with ``column`` moved by ``sd`` pool standard deviations; when the model uses the column
    its outputs are recomputed (the model sees the moved inputs)."""
    out = frame.copy()
    out[column] = out[column].astype(float) + sd * float(table.pool[column].astype(float).std())
    return rescore(table, out) if column in table.source.model_columns else out
