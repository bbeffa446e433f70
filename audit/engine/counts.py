"""Exact, mergeable counts of (label, prediction) pairs: everything a confusion matrix, a class
mix, BBSE or a proportion metric needs, computed per partition and added up.

Poisson bootstrap on counts: giving every row an independent Poisson(1) weight makes a cell
with ``c`` rows weigh Poisson(c), and sums of independent Poissons are Poisson, so the replicates
of merged counts have exactly the distribution of merged per-partition replicates; they are
therefore drawn once, from the merged counts (:meth:`OutcomeCounts.poisson_replicates`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from detectors.base import FrozenDict

MISSING = ""  # the label of an unlabelled row, or the prediction of a row without one
ALL_ROWS = "__all_rows__"  # the outcome counts of every row, beside the slices'


@dataclass(frozen=True)
class OutcomeCounts:
    """Rows per ``(label, prediction)`` pair, labels and predictions as strings.

    >>> a = OutcomeCounts.from_columns(pd.Series(["cat", "dog"]), pd.Series(["cat", "cat"]))
    >>> b = OutcomeCounts.from_columns(pd.Series(["dog"]), pd.Series(["dog"]))
    >>> merged = a.merge(b)
    >>> merged.n, merged.confusion(["cat", "dog"]).tolist()
    (3, [[1, 0], [1, 1]])
    """

    pairs: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", FrozenDict(dict(self.pairs)))

    @classmethod
    def from_columns(cls, y_true: pd.Series | None, y_pred: pd.Series | None, mask: np.ndarray | None = None,
                     ) -> "OutcomeCounts":
        """Counts of the rows selected by ``mask`` (all rows when None); a missing column counts as ``""``."""
        given = y_true if y_true is not None else y_pred
        if given is None:
            raise ValueError("counting outcomes needs a label or a prediction column")
        n = len(given)
        keep = np.ones(n, bool) if mask is None else np.asarray(mask, bool)
        true = _as_text(y_true, keep)
        pred = _as_text(y_pred, keep)
        counts = pd.DataFrame({"t": true, "p": pred}).value_counts(sort=False)
        return cls({(str(t), str(p)): int(c) for (t, p), c in counts.items()})

    @staticmethod
    def pair_codes(y_true: pd.Series | None, y_pred: pd.Series | None, n: int) -> tuple[list, np.ndarray]:
        """The distinct (label, prediction) pairs and each row's pair index, (n,)."""
        t_codes, t_values = _factorize(y_true, n)
        p_codes, p_values = _factorize(y_pred, n)
        combined = t_codes * len(p_values) + p_codes
        present, codes = np.unique(combined, return_inverse=True)
        pairs = [(t_values[c // len(p_values)], p_values[c % len(p_values)]) for c in present]
        return pairs, codes.ravel()

    @classmethod
    def from_codes(cls, pairs: list, codes: np.ndarray) -> "OutcomeCounts":
        counts = np.bincount(codes, minlength=len(pairs))
        return cls({pair: int(c) for pair, c in zip(pairs, counts) if c})

    def merge(self, other: "OutcomeCounts") -> "OutcomeCounts":
        out = dict(self.pairs)
        for key, c in other.pairs.items():
            out[key] = out.get(key, 0) + c
        return OutcomeCounts(out)

    @property
    def n(self) -> int:
        return int(sum(self.pairs.values()))

    def classes(self) -> set[str]:
        return {v for pair in self.pairs for v in pair if v != MISSING}

    def confusion(self, classes) -> np.ndarray:
        """(k, k) counts in ``classes`` order, rows = label; pairs with other values are left out."""
        index = {str(c): i for i, c in enumerate(classes)}
        cm = np.zeros((len(index), len(index)), dtype=np.int64)
        for (t, p), c in self.pairs.items():
            if t in index and p in index:
                cm[index[t], index[p]] += c
        return cm

    def predicted(self, classes) -> np.ndarray:
        """(k,) rows per predicted class."""
        index = {str(c): i for i, c in enumerate(classes)}
        out = np.zeros(len(index), dtype=np.int64)
        for (_, p), c in self.pairs.items():
            if p in index:
                out[index[p]] += c
        return out

    def labels(self, classes) -> np.ndarray:
        """(k,) rows per label."""
        index = {str(c): i for i, c in enumerate(classes)}
        out = np.zeros(len(index), dtype=np.int64)
        for (t, _), c in self.pairs.items():
            if t in index:
                out[index[t]] += c
        return out

    @staticmethod
    def poisson_replicates(counts: np.ndarray, *, n_bootstrap: int, random_state: int) -> np.ndarray:
        """(n_bootstrap, *counts.shape) Poisson-bootstrap replicates of a count array."""
        rng = np.random.default_rng(random_state)
        return rng.poisson(np.asarray(counts, float), size=(int(n_bootstrap), *np.shape(counts)))


def _as_text(column: pd.Series | None, keep: np.ndarray) -> np.ndarray:
    if column is None:
        return np.full(int(keep.sum()), MISSING, dtype=object)
    values = column[keep]
    return np.where(values.isna().to_numpy(), MISSING, values.astype(str).to_numpy()).astype(object)


def _factorize(column: pd.Series | None, n: int) -> tuple[np.ndarray, list[str]]:
    """Integer codes (n,) and the text of each code; a missing value is ``""``."""
    if column is None:
        return np.zeros(n, np.int64), [MISSING]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, values = column.cat.codes.to_numpy().astype(np.int64), list(column.cat.categories)
    else:
        codes, values = pd.factorize(column, use_na_sentinel=True)
        codes, values = np.asarray(codes, np.int64), list(values)
    texts = [str(v) for v in values] + [MISSING]
    return np.where(codes < 0, len(values), codes), texts
