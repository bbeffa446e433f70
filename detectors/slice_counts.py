"""Sufficient statistics of a slice metric for :class:`detectors.slices.SliceEvaluator`: successes
and denominator of a proportion from a confusion matrix, and AUC with its DeLong standard error."""
from __future__ import annotations

import numpy as np
from scipy import stats

from detectors.base import DetectorInputError
from detectors.metric_registry import is_proportion
from detectors.slice_results import SLICE_METRICS

_PROPORTIONS = tuple(m for m in SLICE_METRICS if is_proportion(m))  # the slice metrics counted as k of n


def _proportion_counts(name: str, cm: np.ndarray, pos: int | None) -> dict:
    total, correct = int(cm.sum()), int(np.trace(cm))
    if name in ("accuracy", "error_rate"):
        k, n = (correct, total) if name == "accuracy" else (total - correct, total)
    elif pos is None:
        raise DetectorInputError(f"metric {name!r} needs positive=<class label>.")
    elif name == "sensitivity":
        k, n = int(cm[pos, pos]), int(cm[pos].sum())
    elif name == "precision":
        k, n = int(cm[pos, pos]), int(cm[:, pos].sum())
    else:
        negatives = np.delete(cm, pos, axis=0)
        fp, n = int(negatives[:, pos].sum()), int(negatives.sum())
        k = n - fp if name == "specificity" else fp
    return {"k": k, "n": n, "value": k / n if n else float("nan"), "method": "wilson"}


def _auc_summary(codes: np.ndarray, scores: np.ndarray, pos: int | None) -> dict:
    """AUC and its DeLong standard error (``codes``: integer labels, ``pos``: positive code)."""
    if pos is None:
        raise DetectorInputError("metric 'auc' needs positive=<class label>.")
    is_pos = codes == pos
    s = np.asarray(scores, dtype=float)
    positives, negatives = s[is_pos], s[~is_pos]
    m, n = positives.size, negatives.size
    if min(m, n) < 2:
        return {"value": float("nan"), "n": min(m, n), "se": float("nan"), "method": "delong"}
    ranks = stats.rankdata(np.concatenate([positives, negatives]))
    v10 = (ranks[:m] - stats.rankdata(positives)) / n
    v01 = 1 - (ranks[m:] - stats.rankdata(negatives)) / m
    se = float(np.sqrt(v10.var(ddof=1) / m + v01.var(ddof=1) / n))
    return {"value": float(v10.mean()), "n": min(m, n), "se": se, "method": "delong"}
