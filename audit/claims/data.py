"""What the claim layer reads: the two frames, the model's outputs on them and the audit's rules.

:class:`ClaimData` is the one typed input of :func:`audit.claims.decide_claims` beside the audit's
evidence. Columns are encoded once (:meth:`ClaimData.codes`, :meth:`ClaimData.numeric`), so the many
re-tests of one audit read integer codes and pre-sorted values instead of the frames.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from detectors.reweighted import category_codes

__all__ = ["ClaimData", "Column"]

@dataclass(frozen=True)
class Column:
    """One column of both frames: integer codes over the union of values (categorical), or the values
    (numeric)."""

    name: str
    numeric: bool
    benchmark: np.ndarray
    production: np.ndarray

    def bins(self, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Codes of a numeric column's benchmark quantile bins (missing values a bin of their own)."""
        xb, xp = self.benchmark, self.production
        finite = xb[np.isfinite(xb)]
        if finite.size == 0:
            return np.zeros(len(xb), int), np.zeros(len(xp), int)
        edges = np.unique(np.quantile(finite, np.linspace(0, 1, k + 1)[1:-1]))

        def code(x: np.ndarray) -> np.ndarray:
            out = np.searchsorted(edges, x, side="right")
            return np.where(np.isfinite(x), out, len(edges) + 1)

        return code(xb), code(xp)


@dataclass(frozen=True)
class ClaimData:
    """The rows behind an audit's evidence, as the claim layer re-tests them.

    Attributes
    ----------
    benchmark, production : DataFrame of shape (n_b, ...), (n_p, ...)
    classes : tuple of str
        The task's classes, in the order of the score matrices' columns.
    y_true_b, y_pred_b : array of shape (n_b,) or None
    y_true_p, y_pred_p : array of shape (n_p,) or None (``y_true_p`` None: production is unlabelled)
    proba_b, proba_p : array of shape (n, k) or None
    positive : str or None, the positive class of a binary task
    metric : str, the primary metric (canonical name)
    alpha : float
    min_slice_size : int
    seed : int
    n_tests : int, the size of the audit's correction family
    floors : mapping of floor name -> value (``performance_drop``, ...)
    prior_estimate : mapping class -> share, or None
        A reliable label-free (BBSE) estimate of production's class mix, when production is unlabelled.
    """

    benchmark: pd.DataFrame
    production: pd.DataFrame
    classes: tuple[str, ...]
    y_true_b: np.ndarray | None
    y_pred_b: np.ndarray | None
    y_true_p: np.ndarray | None
    y_pred_p: np.ndarray | None
    proba_b: np.ndarray | None
    proba_p: np.ndarray | None
    positive: str | None
    metric: str
    alpha: float
    min_slice_size: int
    seed: int
    n_tests: int = 1
    floors: Mapping[str, float] = field(default_factory=dict)
    prior_estimate: Mapping[str, float] | None = None
    _columns: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_benchmark(self) -> int:
        return len(self.benchmark)

    @property
    def n_production(self) -> int:
        return len(self.production)

    @property
    def labelled(self) -> bool:
        return self.y_true_b is not None and self.y_true_p is not None

    def floor(self, name: str, default: float) -> float:
        value = self.floors.get(name)
        return float(default if value is None else value)

    def column(self, name: str, *, numeric: bool) -> Column | None:
        """A frame column, an output (``predicted_class``, ``score``, ``proba_<class>``) or the labels
        (``<label>``), encoded once as numbers or as category codes; None when either side lacks it."""
        key = (name, numeric)
        if key not in self._columns:
            self._columns[key] = self._build(name, numeric)
        return self._columns[key]

    def _build(self, name: str, numeric: bool) -> Column | None:
        b, p = self._arrays(name)
        if b is None or p is None:
            return None
        if numeric:
            try:
                return Column(name, True, np.asarray(b, dtype=float), np.asarray(p, dtype=float))
            except (TypeError, ValueError):
                pass  # values that are not numbers: compared as categories
        cb, cp, _ = category_codes(b, p)
        return Column(name, False, cb, cp)

    def _arrays(self, name: str) -> tuple[Any, Any]:
        if name == "<label>":
            return self.y_true_b, self.y_true_p
        if name == "predicted_class":
            return self.y_pred_b, self.y_pred_p
        if name in self.benchmark.columns and name in self.production.columns:
            b, p = self.benchmark[name], self.production[name]
            if pd.api.types.is_numeric_dtype(b) and pd.api.types.is_numeric_dtype(p) \
                    and not pd.api.types.is_bool_dtype(b) and not pd.api.types.is_bool_dtype(p):
                return b.to_numpy(dtype=float), p.to_numpy(dtype=float)
            return b.astype(str).to_numpy(), p.astype(str).to_numpy()
        if self.proba_b is None or self.proba_p is None:
            return None, None
        if name == "score" and self.proba_b.shape[1] == 2:
            return self.proba_b[:, 1], self.proba_p[:, 1]
        if name.startswith("proba_") and name[6:] in self.classes:
            i = self.classes.index(name[6:])
            return self.proba_b[:, i], self.proba_p[:, i]
        return None, None
