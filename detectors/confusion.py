"""Small helpers shared by the label detectors: label encoding, confusion counts, metrics
computed from (batches of) confusion matrices, and the two-sample chi-square on counts.

Convention everywhere: a confusion matrix ``cm`` has rows = true class, columns = predicted
class (as in scikit-learn), and may carry leading batch dimensions ``(..., k, k)`` so that
bootstrap replicates are scored in one vectorised call.

>>> import numpy as np
>>> cm = np.array([[8, 2], [1, 9]])
>>> round(float(accuracy_from_confusion(cm)), 3), round(float(balanced_accuracy_from_confusion(cm)), 3)
(0.85, 0.85)
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from detectors.base import DetectorInputError

# Exact multinomial row bootstrap up to this many rows; a CLT draw of the mean beyond.
EXACT_BOOTSTRAP_ROWS = 20_000

__all__ = [
    "as_label_array",
    "parse_predictions",
    "check_proba",
    "match_columns",
    "sorted_classes",
    "encode",
    "confusion_counts",
    "accuracy_from_confusion",
    "recall_from_confusion",
    "precision_from_confusion",
    "f1_from_confusion",
    "balanced_accuracy_from_confusion",
    "macro_f1_from_confusion",
    "chi2_two_sample",
    "bootstrap_row_means",
    "total_variation",
]


class _FrozenLabelMemo:
    """What was learned about a label array that cannot change: a text array (object dtype) that
    owns its data and is read-only. An audit hands the same million text labels to a dozen
    detectors; each checked them for missing values and hashed them into codes again (about a
    second in all). Writeable arrays and views (their base could change) are always recomputed;
    an entry goes when its array does."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, dict]] = {}

    @staticmethod
    def frozen(arr: Any) -> bool:
        return (isinstance(arr, np.ndarray) and arr.dtype == object and not arr.flags.writeable
                and arr.flags.owndata)

    def get(self, arr: np.ndarray, key: Any, compute: Callable[[], Any]) -> Any:
        if not self.frozen(arr):
            return compute()
        ident = id(arr)
        entry = self._entries.get(ident)
        if entry is None or entry[0]() is not arr:
            def forget(_: object, i: int = ident) -> None:
                self._entries.pop(i, None)

            entry = (weakref.ref(arr, forget), {})
            self._entries[ident] = entry
        if key not in entry[1]:
            entry[1][key] = compute()
        return entry[1][key]


_FROZEN = _FrozenLabelMemo()


def as_label_array(values: Any, name: str) -> np.ndarray:
    """1-D label array without missing values; raises :class:`DetectorInputError` otherwise."""
    arr = np.asarray(values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else values)
    if arr.ndim != 1:
        raise DetectorInputError(f"{name} must be 1-D labels, got shape {arr.shape}.")
    if arr.size and _FROZEN.get(arr, "missing", lambda: bool(pd.isna(arr).any())):
        bad = np.flatnonzero(pd.isna(arr))[:5].tolist()
        raise DetectorInputError(f"{name} contains missing labels (rows {bad}...).")
    return arr


def parse_predictions(y_pred: Any, classes: Any = None,
                      name: str = "y_pred") -> tuple[str, np.ndarray, np.ndarray | None]:
    """Split model outputs into ``("labels", labels, None)`` or ``("proba", matrix, column_classes)``.

    Probabilities come as an ``(n, k)`` array (class order from ``classes``) or a DataFrame
    whose columns are class names, optionally prefixed ``proba_``.
    """
    if isinstance(y_pred, pd.DataFrame):
        cols = [str(c) for c in y_pred.columns]
        if all(c.startswith("proba_") for c in cols):
            cols = [c[len("proba_"):] for c in cols]
        column_classes = np.array(cols, dtype=object) if classes is None else np.asarray(classes, dtype=object)
        if len(column_classes) != y_pred.shape[1]:
            raise DetectorInputError(f"{name}: {y_pred.shape[1]} probability columns but "
                                     f"{len(column_classes)} classes.")
        return "proba", check_proba(y_pred.to_numpy(dtype=float), name), column_classes
    arr = np.asarray(y_pred)
    if arr.ndim == 1:
        return "labels", as_label_array(arr, name), None
    if arr.ndim != 2:
        raise DetectorInputError(f"{name} must be 1-D labels or an (n, k) probability matrix, got shape {arr.shape}.")
    if classes is None:
        return "proba", check_proba(arr.astype(float), name), None
    named = np.asarray(classes, dtype=object)
    if len(named) != arr.shape[1]:
        raise DetectorInputError(f"{name}: {arr.shape[1]} probability columns but {len(named)} classes.")
    return "proba", check_proba(arr.astype(float), name), named


def check_proba(proba: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(proba).all():
        rows = np.flatnonzero(~np.isfinite(proba).all(1))[:5].tolist()
        raise DetectorInputError(f"{name} has NaN or infinite probabilities (rows {rows}...).")
    sums = proba.sum(1)
    if (proba < 0).any() or np.any(np.abs(sums - 1) > 1e-3):
        rows = np.flatnonzero((proba < 0).any(1) | (np.abs(sums - 1) > 1e-3))[:5].tolist()
        raise DetectorInputError(f"{name} rows must be probabilities summing to 1 (rows {rows}...).")
    return proba / sums[:, None]


def match_columns(column_classes: np.ndarray, true_classes: np.ndarray) -> np.ndarray:
    """Map probability-column names onto the label values (``"1"`` -> ``1``) by string form."""
    by_str = {str(c): c for c in true_classes}
    return np.array([by_str.get(str(c), c) for c in column_classes], dtype=object)


def sorted_classes(*arrays: np.ndarray) -> np.ndarray:
    """Sorted union of labels as Python scalars; falls back to sorting by ``str`` for mixed types."""
    arrays = tuple(np.asarray(a) for a in arrays)
    kinds = {a.dtype.kind for a in arrays if a.size}
    if kinds and (kinds <= set("biuf") or kinds == {"U"}):
        # Fast path for numeric or string arrays: no object conversion of millions of rows.
        values = np.unique(np.concatenate(arrays))
        if values.dtype.kind == "f" and np.all(values == np.round(values)):
            values = values.astype(np.int64)  # 1.0 and 1 are the same class; report it as 1
        return np.array(values.tolist(), dtype=object)
    # object arrays are hashed as they are (astype(object) would copy every row), each on its own:
    # the distinct values of the concatenation, in order of first appearance, are those of the
    # concatenated distinct values of each array (and a read-only array's are kept)
    parts = [_FROZEN.get(a, "unique", functools.partial(pd.unique, a)) if a.dtype == object
             else pd.unique(a.astype(object)) for a in arrays]
    values = (parts[0] if len(parts) == 1 else pd.unique(np.concatenate(parts))) if parts else np.array([])
    try:
        ordered = sorted(values)
    except TypeError:
        ordered = sorted(values, key=str)
    # Python-native scalars so that result dicts key on 1, not np.int64(1).
    return np.array([v.item() if isinstance(v, np.generic) else v for v in ordered], dtype=object)


def encode(values: ArrayLike, classes: Sequence[Any] | np.ndarray, name: str) -> np.ndarray:
    """Integer codes of ``values`` in ``classes``; unknown labels raise with their names."""
    values = np.asarray(values)
    classes = list(classes)
    # a read-only array's codes are kept (a copy is returned: callers may write into theirs)
    codes = _FROZEN.get(values, ("codes", tuple(classes)), lambda: pd.Index(classes).get_indexer(values)).copy()
    if (codes < 0).any():
        unseen = pd.unique(values[codes < 0].astype(object))[:10].tolist()
        raise DetectorInputError(f"{name} has classes unseen in the benchmark: {unseen}.")
    return codes


def confusion_counts(true_codes: np.ndarray, pred_codes: np.ndarray, k_true: int,
                     k_pred: int | None = None) -> np.ndarray:
    """Counts ``cm[t, p]`` of rows with true class ``t`` predicted ``p``; shape ``(k_true, k_pred)``."""
    k_pred = k_true if k_pred is None else k_pred
    flat = np.bincount(true_codes * k_pred + pred_codes, minlength=k_true * k_pred)
    return flat.reshape(k_true, k_pred)


def _ratio(num, den):
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _diag(cm: np.ndarray) -> np.ndarray:
    return np.diagonal(cm, axis1=-2, axis2=-1)


def accuracy_from_confusion(cm) -> np.ndarray:
    cm = np.asarray(cm, dtype=float)
    return _ratio(_diag(cm).sum(-1), cm.sum((-2, -1)))


def recall_from_confusion(cm) -> np.ndarray:
    """Per-class recall, shape ``(..., k)``; NaN for classes without true rows."""
    cm = np.asarray(cm, dtype=float)
    return _ratio(_diag(cm), cm.sum(-1))


def precision_from_confusion(cm) -> np.ndarray:
    """Per-class precision, shape ``(..., k)``; NaN for classes never predicted."""
    cm = np.asarray(cm, dtype=float)
    return _ratio(_diag(cm), cm.sum(-2))


def f1_from_confusion(cm) -> np.ndarray:
    """Per-class F1 ``2TP / (2TP + FP + FN)``, shape ``(..., k)``; NaN for absent classes."""
    cm = np.asarray(cm, dtype=float)
    tp = _diag(cm)
    return _ratio(2 * tp, cm.sum(-1) + cm.sum(-2))


def _nanmean_last(x: np.ndarray) -> np.ndarray:
    valid = np.isfinite(x)
    count = valid.sum(-1)
    return _ratio(np.where(valid, x, 0.0).sum(-1), count)


def balanced_accuracy_from_confusion(cm) -> np.ndarray:
    """Mean recall over classes that have true rows."""
    return _nanmean_last(recall_from_confusion(cm))


def macro_f1_from_confusion(cm) -> np.ndarray:
    """Mean F1 over classes that occur as truth or prediction."""
    return _nanmean_last(f1_from_confusion(cm))


def total_variation(p, q) -> float:
    """Total variation distance ``0.5 * sum |p - q|`` between two distributions."""
    return float(0.5 * np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float)).sum())


def chi2_two_sample(counts_a, counts_b) -> tuple[float, float, int]:
    """Two-sample chi-square test of equal category distributions (no continuity correction).

    The same test as :func:`detectors.univariate.chi2_two_sample` (categories with an expected
    count below 5 pooled, Fisher's exact p-value for a still-sparse 2 x 2 table), so label,
    concept and covariate tests agree. Categories empty in both samples are dropped; with fewer
    than two categories left the samples cannot differ and ``(0.0, 1.0, 0)`` is returned.
    """
    # scipy.stats (~1 s to import) only when a table is tested: label shift (BBSE) imports this module without it
    from detectors.univariate import chi2_two_sample as pooled_chi2

    a, b = np.asarray(counts_a, dtype=float), np.asarray(counts_b, dtype=float)
    if a.sum() == 0 or b.sum() == 0:
        return 0.0, 1.0, 0
    # The audit's one chi-square: sparse categories pooled, Fisher's exact test for a sparse 2 x 2.
    outcome = pooled_chi2(a, b)
    return float(outcome.statistic), float(outcome.p_value), int(outcome.dof)


def bootstrap_row_means(rows: np.ndarray, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """``n_bootstrap`` bootstrap replicates of the column means of ``rows`` (shape ``(n_bootstrap, d)``).

    Exact multinomial resampling (chunked matrix products) up to 20,000 rows; beyond that the
    CLT draw ``N(mean, cov / n)`` is indistinguishable and needs no ``n_bootstrap x n`` matrix.
    """
    n = len(rows)
    if n > EXACT_BOOTSTRAP_ROWS:
        cov = np.atleast_2d(np.cov(rows, rowvar=False, bias=True)) / n
        return rng.multivariate_normal(rows.mean(0), cov, size=n_bootstrap, method="eigh")
    chunk = max(1, 2_000_000 // n)
    parts = [rng.multinomial(n, np.full(n, 1.0 / n), size=min(chunk, n_bootstrap - s)) @ rows / n
             for s in range(0, n_bootstrap, chunk)]
    return np.vstack(parts)
