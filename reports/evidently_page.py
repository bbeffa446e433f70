"""Evidently's own data-drift report as a companion page beside the contextshift report (SPEC §7).

Evidently is imported lazily (it is heavy and pulls telemetry): ``DO_NOT_TRACK`` is set to
``"1"`` before the import unless the caller set it. Usage follows ``STACK-NOTES.md``: current
data first, ``save_html`` with a ``str`` path. The page is Evidently's, not ours: it is larger
than our report and is not guaranteed to be offline-safe; link to it, do not inline it.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["write_evidently_page", "evidently_page_html"]


def _sample(frame: pd.DataFrame, max_rows: int | None, random_state: int) -> pd.DataFrame:
    if max_rows is None or len(frame) <= max_rows:
        return frame
    return frame.sample(n=max_rows, random_state=random_state)


def write_evidently_page(benchmark: pd.DataFrame, production: pd.DataFrame, *,
                         numerical_columns: Sequence[str], categorical_columns: Sequence[str],
                         path: str | os.PathLike, max_rows: int | None = 100_000,
                         random_state: int = 0) -> Path:
    """Write Evidently's ``DataDriftPreset`` report comparing ``production`` with ``benchmark``.

    Parameters
    ----------
    benchmark, production : DataFrame of shape (n_rows, n_columns)
    numerical_columns, categorical_columns : sequence of str
        Columns to compare; every one must exist in both frames.
    path : path-like
        Output HTML file; written atomically (temporary file, then rename).
    max_rows : int or None
        Each frame is randomly subsampled (seeded) to at most this many rows, because Evidently's
        page grows with the data (about 5 MB at 200k rows); ``None`` keeps every row.

    Returns
    -------
    Path of the written page.
    """
    columns = list(numerical_columns) + list(categorical_columns)
    if not columns:
        raise ValueError("Give at least one numerical or categorical column.")
    for name, frame in (("benchmark", benchmark), ("production", production)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}.")
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} has no column(s) {missing[:10]}.")
        if frame.empty:
            raise ValueError(f"{name} has no rows.")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    definition = DataDefinition(numerical_columns=list(numerical_columns),
                                categorical_columns=list(categorical_columns))
    current = Dataset.from_pandas(_sample(production[columns], max_rows, random_state), data_definition=definition)
    reference = Dataset.from_pandas(_sample(benchmark[columns], max_rows, random_state), data_definition=definition)
    with warnings.catch_warnings():  # Evidently's chi-square divides by zero on unseen categories
        warnings.simplefilter("ignore", RuntimeWarning)
        snapshot = Report([DataDriftPreset()], include_tests=True).run(current, reference)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    snapshot.save_html(str(temporary))  # a str path: Evidently ignores file objects
    os.replace(temporary, target)
    return target


def evidently_page_html(benchmark: pd.DataFrame, production: pd.DataFrame, *,
                        numerical_columns: Sequence[str], categorical_columns: Sequence[str],
                        max_rows: int | None = 100_000, random_state: int = 0) -> str:
    """Like :func:`write_evidently_page` but return the page as a string (for callers that
    store it themselves)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="contextshift-evidently-") as tmp:
        path = write_evidently_page(benchmark, production, numerical_columns=numerical_columns,
                                    categorical_columns=categorical_columns, path=Path(tmp) / "evidently.html",
                                    max_rows=max_rows, random_state=random_state)
        return path.read_text(encoding="utf-8")
