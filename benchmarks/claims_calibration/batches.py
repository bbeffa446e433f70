"""Successive production batches of a real table, for monitors audited over many runs.

A monitor audits one benchmark against a new production batch per run; its false-alert budget is
spent over all runs. :func:`production_batches` yields the batches: i.i.d. draws from the table's
pool (no change), or, from run ``change_from`` on, a SYNTHETIC change: a numeric feature the model
uses moved by ``shift_sd`` standard deviations (model outputs recomputed), or ``slice_drop``
of an expert slice's correctly predicted rows given another label (the slice's accuracy drops by
about that many points).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchmarks.claims_calibration.changes import flip_in_slice, offset_column
from benchmarks.claims_calibration.tables import PreparedTable

__all__ = ["Batch", "benchmark_sample", "production_batches"]


@dataclass(frozen=True)
class Batch:
    """One run's production data; ``changed`` says whether the planted change is in it."""

    run: int
    frame: pd.DataFrame
    changed: bool


def benchmark_sample(table: PreparedTable, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """The monitor's benchmark: ``n`` pool rows (with replacement when the pool is smaller)."""
    rows = rng.choice(len(table.pool), n, replace=len(table.pool) < n)
    return table.pool.iloc[rows].reset_index(drop=True)


def production_batches(table: PreparedTable, runs: int, n: int, *, change: str = "none", change_from: int = 0,
                       shift_sd: float = 0.3, slice_drop: float = 0.10, slice_expression: str | None = None,
                       labelled: bool = True, random_state: int = 0) -> Iterator[Batch]:
    """Yield ``runs`` production batches of ``n`` rows.

    Parameters
    ----------
    table : PreparedTable
    runs, n : int
        Number of batches and rows per batch.
    change : {"none", "shift", "slice_drop"}
        The SYNTHETIC change applied from run ``change_from`` (0-based) on.
    shift_sd : float
        ``"shift"``: offset of the table's ``used`` feature, in pool standard deviations.
    slice_drop : float
        ``"slice_drop"``: accuracy points lost inside the slice.
    slice_expression : str, optional
        ``"slice_drop"``: the slice (default: the pack's first expert slice).
    labelled : bool
        Keep the ``label`` column in the batches.
    random_state : int
    """
    if change not in ("none", "shift", "slice_drop"):
        raise ValueError(f"change must be 'none', 'shift' or 'slice_drop', got {change!r}.")
    if runs < 1 or n < 1:
        raise ValueError(f"runs and n must be >= 1, got runs={runs}, n={n}.")
    rng = np.random.default_rng(random_state)
    pool = table.pool
    expression = slice_expression or table.pack().slices[0].expression
    for run in range(runs):
        rows = rng.choice(len(pool), n, replace=len(pool) < n)
        frame = pool.iloc[rows].reset_index(drop=True)
        changed = change != "none" and run >= change_from
        if changed and change == "shift":
            frame = offset_column(table, frame, table.source.used, shift_sd)
        elif changed:
            frame = flip_in_slice(table, frame, expression, slice_drop, rng)
        if not labelled:
            frame = frame.drop(columns=["label"])
        yield Batch(run=run, frame=frame, changed=changed)
