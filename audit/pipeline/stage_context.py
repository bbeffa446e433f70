"""What every stage of an audit reads: the frames, columns, pack and options (:class:`StageContext`),
and the model's outputs on one dataset (:class:`Outputs`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from audit.options import AuditOptions
from audit.pipeline.columns import AuditColumns, score_matrix
from detectors.base import DetectorInputError

__all__ = ["Outputs", "StageContext"]


@dataclass
class Outputs:
    """The model's outputs on one dataset, as the detectors want them."""

    y_true: np.ndarray | None
    y_pred: np.ndarray | None
    proba: np.ndarray | None  # (n, k) in ``classes`` order

    @property
    def positive_scores(self) -> np.ndarray | None:
        return None if self.proba is None or self.proba.shape[1] != 2 else self.proba[:, 1]

    def uncertainty(self) -> np.ndarray | None:
        return None if self.proba is None else 1.0 - self.proba.max(axis=1)

    @property
    def n_rows(self) -> int:
        """Rows of the dataset these outputs are of (from whichever output it has)."""
        present = next((a for a in (self.y_true, self.y_pred, self.proba) if a is not None), None)
        if present is None:
            raise ValueError("outputs with neither labels, predictions nor probabilities have no rows")
        return len(present)


@dataclass
class StageContext:
    benchmark: pd.DataFrame
    production: pd.DataFrame
    columns: AuditColumns
    pack: Any
    options: AuditOptions
    classes: list[str] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)  # parts that could not run, and why
    covariate_result: Any = None  # set by covariate(): the label stage checks BBSE's assumption with it
    summaries: Any = None  # Dask engine: exact counts and sketches of every row (audit.engine.exact)
    reference: Any = None  # audit.pipeline.reference.ReferenceFits: benchmark-side fits kept across audits
    # what several stages read and each would otherwise recompute over every row (the within-context strata)
    shared: dict[str, Any] = field(default_factory=dict)
    # recorded in the result's parameters beside the options (the benchmark series a benchmark was built from)
    parameters: dict[str, Any] = field(default_factory=dict)

    def fitted(self, part: str, fit, **depends) -> Any:
        """``fit()`` on the benchmark, or the same fitted state from the reference cache (a
        monitor fits its benchmark once); ``depends``: what else ``fit`` reads beyond the audit's key."""
        return fit() if self.reference is None else self.reference.fitted(part, fit, **depends)

    def guard(self, part: str, default: Any, run, *args) -> Any:
        """Run one part of the audit; data it cannot test (a class the benchmark never saw, an
        all-missing column...) skips that part with a note instead of failing the audit."""
        try:
            return run(*args)
        except DetectorInputError as exc:
            self.notes.append({"part": part, "reason": str(exc)})
            return default

    @property
    def alpha(self) -> float:
        return float(self.options.alpha)

    @property
    def correction(self) -> str:
        return str(self.options.correction)

    @property
    def seed(self) -> int:
        return int(self.options.seed)

    @property
    def min_slice_size(self) -> int:
        return int(self.options.min_slice_size or self.pack.min_slice_size)

    def outputs(self, frame: pd.DataFrame, labelled: bool) -> Outputs:
        cols = self.columns
        proba = score_matrix(frame, cols.scores, self.classes)
        y_pred = _frozen_text(frame[cols.prediction]) if cols.prediction else None
        if y_pred is None and proba is not None:
            y_pred = _frozen(np.asarray(self.classes, dtype=object)[proba.argmax(axis=1)])
        y_true = _frozen_text(frame[cols.label]) if labelled and cols.label else None
        return Outputs(y_true=y_true, y_pred=y_pred, proba=proba)


def _frozen(labels: np.ndarray) -> np.ndarray:
    """``labels`` read-only (it owns its data): the detectors then check and encode these labels once
    per audit, not once per detector (detectors.confusion keeps what it learned about such arrays)."""
    labels.flags.writeable = False
    return labels


def _frozen_text(column: pd.Series) -> np.ndarray:
    return _frozen(column.astype(str).to_numpy(dtype=object, copy=True))
