"""Observed classification metrics, each with a confidence interval and its sample size.

Built to be called many times (once per slice): proportions use the Wilson interval (no
resampling), confusion-matrix metrics a multinomial bootstrap of the ``k x k`` cell counts
(cost independent of the number of rows), AUC the DeLong interval.

>>> y_true = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
>>> y_pred = [0, 0, 0, 1, 1, 1, 1, 1, 0, 1]
>>> m = metric_with_ci("sensitivity", y_true, y_pred)
>>> m.value, round(m.ci_low, 3), round(m.ci_high, 3), m.n, m.method
(0.8333333333333334, 0.436, 0.97, 6, 'wilson')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from detectors.base import DetectorInputError, Result, check_in, renamed_parameters
from detectors.confusion import (
    accuracy_from_confusion,
    as_label_array,
    balanced_accuracy_from_confusion,
    confusion_counts,
    encode,
    f1_from_confusion,
    macro_f1_from_confusion,
    precision_from_confusion,
    recall_from_confusion,
    sorted_classes,
)
from detectors.intervals import wilson_interval, z_value

__all__ = ["MetricEstimate", "ObservedPerformance", "metric_with_ci", "metric_with_ci_of_codes", "observed_performance",
           "metric_from_confusion", "METRICS", "infer_positive"]

WILSON_METRICS = ("accuracy", "sensitivity", "specificity", "fpr", "recall", "precision")
BOOTSTRAP_METRICS = ("balanced_accuracy", "macro_f1", "f1")
METRICS = WILSON_METRICS + BOOTSTRAP_METRICS + ("auc",)
NEEDS_POSITIVE = ("sensitivity", "specificity", "fpr", "f1", "auc")
NEEDS_CLASS = ("recall", "precision")


@dataclass(frozen=True)
class MetricEstimate(Result):
    """One metric value with its CI, the rows it rests on and how the CI was obtained.

    ``n`` is the denominator that matters (e.g. positives for sensitivity); ``cls`` is set for
    per-class metrics. ``status`` is ``"insufficient_data"`` when ``n`` is below the minimum.
    """

    name: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    cls: Any = None
    status: str = "ok"

    @property
    def key(self) -> str:
        return self.name if self.cls is None else f"{self.name}[{self.cls}]"


@dataclass(frozen=True)
class ObservedPerformance(Result):
    """Metrics measured on labelled rows (``metrics`` holds per-class recall too)."""

    metrics: tuple
    n: int
    confidence: float

    def get(self, key: str) -> MetricEstimate:
        return next(m for m in self.metrics if m.key == key)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "confidence": self.confidence,
                "metrics": {m.key: m.to_dict() for m in self.metrics}}


def infer_positive(classes: Sequence) -> Any:
    """The positive class of 0/1 or False/True labels; ``None`` when it cannot be guessed."""
    values = set(classes)
    if values and values <= {0, 1}:
        return True if values <= {False, True} and any(isinstance(v, bool) for v in values) else 1
    return None


def metric_from_confusion(name: str, cm: np.ndarray, pos: int | None = None, cls: int | None = None) -> np.ndarray:
    """Metric ``name`` of (a batch of) confusion matrices ``(..., k, k)``, rows = truth.

    ``pos`` is the index of the positive class (sensitivity, specificity, fpr, f1), ``cls`` the
    index of the class for ``recall``/``precision``.
    """
    cm = np.asarray(cm, dtype=float)
    if name == "accuracy":
        return accuracy_from_confusion(cm)
    if name == "balanced_accuracy":
        return balanced_accuracy_from_confusion(cm)
    if name == "macro_f1":
        return macro_f1_from_confusion(cm)
    if name in ("recall", "precision"):
        fn = recall_from_confusion if name == "recall" else precision_from_confusion
        return fn(cm)[..., cls]
    check_in("metric", name, METRICS)
    if pos is None:
        raise DetectorInputError(f"metric {name!r} needs positive=<class label>.")
    if name == "sensitivity":
        return recall_from_confusion(cm)[..., pos]
    if name == "f1":
        return f1_from_confusion(cm)[..., pos]
    if name in ("specificity", "fpr"):
        negatives = np.delete(cm, pos, axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            fpr = negatives[..., pos].sum(-1) / negatives.sum((-2, -1))
        return 1 - fpr if name == "specificity" else fpr
    check_in("metric", name, METRICS)
    raise AssertionError(f"metric {name!r} is known but has no formula")


def _wilson_counts(name: str, cm: np.ndarray, pos: int | None, cls: int | None) -> tuple[Any, Any]:
    """Successes and trials of the proportion metrics (NumPy scalars, or arrays for a batch)."""
    if name == "accuracy":
        return np.trace(cm), cm.sum()
    idx = cls if name in NEEDS_CLASS else pos
    if idx is None:
        raise DetectorInputError(f"metric {name!r} needs positive=<class label>.")
    if name in ("sensitivity", "recall"):
        return cm[idx, idx], cm[idx].sum()
    if name == "precision":
        return cm[idx, idx], cm[:, idx].sum()
    negatives = np.delete(cm, idx, axis=0)  # specificity, fpr: idx is the positive class
    fp, n_neg = negatives[:, idx].sum(), negatives.sum()
    return (n_neg - fp, n_neg) if name == "specificity" else (fp, n_neg)


def _bootstrap_confusion(name, cm, pos, n_bootstrap, confidence, rng) -> tuple[float, float]:
    n = int(cm.sum())
    reps = rng.multinomial(n, cm.ravel() / n, size=n_bootstrap).reshape(n_bootstrap, *cm.shape)
    values = metric_from_confusion(name, reps, pos)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    a = (1 - confidence) / 2
    lo, hi = np.quantile(values, [a, 1 - a])
    return float(lo), float(hi)


def delong_auc(positive_scores: np.ndarray, negative_scores: np.ndarray, *, confidence: float = 0.95):
    """AUC with the DeLong standard error; returns ``(auc, low, high)`` (normal CI, clipped)."""
    m, n = len(positive_scores), len(negative_scores)
    ranks = stats.rankdata(np.concatenate([positive_scores, negative_scores]))
    v10 = (ranks[:m] - stats.rankdata(positive_scores)) / n  # share of negatives below each positive
    v01 = 1 - (ranks[m:] - stats.rankdata(negative_scores)) / m
    auc = float(v10.mean())
    se = float(np.sqrt(v10.var(ddof=1) / m + v01.var(ddof=1) / n))
    z = z_value(confidence)
    return auc, max(0.0, auc - z * se), min(1.0, auc + z * se)


@renamed_parameters(n_boot="n_bootstrap")
def metric_with_ci(name: str, y_true, y_pred=None, scores=None, *, positive=None, cls=None,
                   confidence: float = 0.95, n_bootstrap: int = 500, random_state: int | None = 0,
                   min_samples: int = 1) -> MetricEstimate:
    """One observed metric with its confidence interval.

    Parameters
    ----------
    name : {"accuracy", "balanced_accuracy", "macro_f1", "f1", "sensitivity", "specificity",
        "fpr", "recall", "precision", "auc"}
    y_true, y_pred : array-like of shape (n,)
        Hard labels (``y_pred`` is not needed for ``auc``).
    scores : array-like of shape (n,), optional
        Positive-class score; required for ``auc``.
    positive : label, optional
        Positive class for sensitivity/specificity/fpr/f1/auc (inferred for 0/1 labels).
    cls : label, optional
        Class of ``recall`` / ``precision``.
    min_samples : int
        Below this denominator the result has ``status="insufficient_data"`` and NaN values.

    Returns
    -------
    MetricEstimate
        Wilson interval for proportions, bootstrap over confusion cells for
        balanced_accuracy / macro_f1 / f1, DeLong for auc.
    """
    check_in("metric", name, METRICS)
    y_true = as_label_array(y_true, "y_true")
    if name == "auc":
        return _auc_with_ci(y_true, scores, positive, confidence, min_samples)
    classes, cm = _labelled_confusion(y_true, y_pred)
    return _metric_of_confusion(name, classes, cm, positive=positive, cls=cls, confidence=confidence,
                                n_bootstrap=n_bootstrap, random_state=random_state, min_samples=min_samples)


def metric_with_ci_of_codes(name: str, true_codes, pred_codes, n_classes: int, *, positive=None, cls=None,
                            confidence=0.95, n_bootstrap=500, random_state=0) -> MetricEstimate:
    """:func:`metric_with_ci` (not ``auc``) of class codes in ``range(n_classes)``, bit for bit from one
    count: its classes are the sorted codes present, i.e. the full count cut to them."""
    cm = confusion_counts(np.asarray(true_codes), np.asarray(pred_codes), n_classes)
    present = np.flatnonzero(cm.sum(axis=0) + cm.sum(axis=1))
    classes = np.array(present.tolist(), dtype=object)  # as sorted_classes gives them: Python ints
    return _metric_of_confusion(name, classes, cm[np.ix_(present, present)], positive=positive, cls=cls,
                                confidence=confidence, n_bootstrap=n_bootstrap, random_state=random_state,
                                min_samples=1)


def _labelled_confusion(y_true: np.ndarray, y_pred) -> tuple[np.ndarray, np.ndarray]:
    """The sorted classes of both label arrays and their (k, k) confusion counts (rows = truth)."""
    y_pred = as_label_array(y_pred, "y_pred")
    if len(y_pred) != len(y_true):
        raise DetectorInputError(f"y_true has {len(y_true)} rows but y_pred has {len(y_pred)}.")
    classes = sorted_classes(y_true, y_pred)
    cm = confusion_counts(encode(y_true, classes, "y_true"), encode(y_pred, classes, "y_pred"), len(classes))
    return classes, cm


def _metric_of_confusion(name: str, classes: np.ndarray, cm: np.ndarray, *, positive, cls, confidence: float,
                         n_bootstrap: int, random_state, min_samples: int) -> MetricEstimate:
    """:func:`metric_with_ci` once the labels are counted: every metric of one pair of label
    arrays reads the same counts, so the rows are encoded once, not once per metric."""
    if name in NEEDS_POSITIVE and positive is None:
        positive = infer_positive(classes.tolist())
    pos = _class_index(classes, positive, name) if name in NEEDS_POSITIVE else None
    idx = _class_index(classes, cls, name, role="cls") if name in NEEDS_CLASS else None
    if -1 in (pos, idx):
        # The class is absent from these rows (e.g. a slice without positives): add an empty
        # row/column so that its metric comes out undefined (n = 0) or well defined (specificity).
        classes = np.append(classes, np.array([positive if pos == -1 else cls], dtype=object))
        pos, idx = (len(classes) - 1 if pos == -1 else pos), (len(classes) - 1 if idx == -1 else idx)
        cm = np.pad(cm, ((0, 1), (0, 1)))
    return metric_from_counts(name, cm, pos=pos, cls_index=idx, cls=cls, confidence=confidence, n_bootstrap=n_bootstrap,
                              rng=np.random.default_rng(random_state), min_samples=min_samples)


@renamed_parameters(n_boot="n_bootstrap")
def metric_from_counts(name: str, cm: np.ndarray, *, pos: int | None = None, cls_index: int | None = None,
                       cls: Any = None, confidence: float = 0.95, n_bootstrap: int = 500,
                       rng: np.random.Generator | None = None, min_samples: int = 1) -> MetricEstimate:
    """:func:`metric_with_ci` from a (k, k) confusion matrix (rows = truth) instead of labels:
    ``pos`` / ``cls_index`` are class indices, ``cls`` the label reported with per-class metrics.
    Summaries of data that never fits in memory use this."""
    idx = cls_index
    if name in WILSON_METRICS:
        k_succ, n = _wilson_counts(name, cm, pos, idx)
        if n < max(min_samples, 1):
            return _insufficient(name, int(n), "wilson", cls)
        lo, hi = wilson_interval(k_succ, n, confidence=confidence)
        return MetricEstimate(name, float(k_succ / n), lo, hi, int(n), "wilson", cls)
    n = int(cm.sum())
    value = float(metric_from_confusion(name, cm, pos)) if n else float("nan")
    if n < max(min_samples, 1) or not np.isfinite(value):
        return _insufficient(name, n, "bootstrap", cls)
    lo, hi = _bootstrap_confusion(name, cm, pos, n_bootstrap, confidence, rng or np.random.default_rng(0))
    return MetricEstimate(name, value, lo, hi, n, "bootstrap", cls)


def _class_index(classes: np.ndarray, label, name: str, role: str = "positive") -> int:
    if label is None:
        raise DetectorInputError(f"Metric {name!r} needs {role}=<class label> (classes seen: {classes.tolist()[:10]}).")
    matches = [i for i, c in enumerate(classes.tolist()) if c == label or str(c) == str(label)]
    if not matches:
        # A class absent from this subset: its metric is undefined here, not an input error.
        return -1
    return matches[0]


def _insufficient(name: str, n: int, method: str, cls=None) -> MetricEstimate:
    nan = float("nan")
    return MetricEstimate(name, nan, nan, nan, int(n), method, cls, "insufficient_data")


def _auc_with_ci(y_true, scores, positive, confidence, min_samples) -> MetricEstimate:
    if scores is None:
        raise DetectorInputError("Metric 'auc' needs scores (positive-class probability, shape (n,)).")
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or len(s) != len(y_true):
        raise DetectorInputError(f"scores must have shape ({len(y_true)},), got {s.shape}.")
    if not np.isfinite(s).all():
        raise DetectorInputError("scores contain NaN or infinite values.")
    if positive is None:
        positive = infer_positive(sorted_classes(y_true).tolist())
        if positive is None:
            raise DetectorInputError("Metric 'auc' needs positive=<class label>.")
    is_pos = np.array([v == positive or str(v) == str(positive) for v in y_true.tolist()], dtype=bool)
    n_pos, n_neg = int(is_pos.sum()), int((~is_pos).sum())
    if min(n_pos, n_neg) < max(min_samples, 2):
        return _insufficient("auc", min(n_pos, n_neg), "delong")
    auc, lo, hi = delong_auc(s[is_pos], s[~is_pos], confidence=confidence)
    return MetricEstimate("auc", auc, lo, hi, len(s), "delong")


@renamed_parameters(n_boot="n_bootstrap")
def observed_performance(y_true, y_pred, scores=None, *, metrics: Sequence[str] | None = None, positive=None,
                         confidence: float = 0.95, n_bootstrap: int = 500,
                         random_state: int | None = 0) -> ObservedPerformance:
    """Observed metrics plus per-class recall, each with a CI.

    Default metrics: accuracy, balanced_accuracy, macro_f1; with a known positive class also
    sensitivity, specificity, fpr, f1, and auc when ``scores`` are given.
    """
    y_true = as_label_array(y_true, "y_true")
    classes, cm = _labelled_confusion(y_true, y_pred)
    if positive is None and len(classes) <= 2:
        positive = infer_positive(classes.tolist())
    if metrics is None:
        metrics = ["accuracy", "balanced_accuracy", "macro_f1"]
        if positive is not None and len(classes) <= 2:
            metrics += ["sensitivity", "specificity", "fpr", "f1"] + (["auc"] if scores is not None else [])
    kw = dict(positive=positive, confidence=confidence, n_bootstrap=n_bootstrap, random_state=random_state)
    for m in metrics:
        check_in("metric", m, METRICS)
    out = [metric_with_ci(m, y_true, y_pred, scores, **kw) if m == "auc" else
           _metric_of_confusion(m, classes, cm, cls=None, min_samples=1, **kw) for m in metrics]
    # the classes y_true holds, sorted as sorted_classes(y_true) sorts them, without a second pass over the rows
    true_classes = sorted_classes(np.array([c for c, row in zip(classes.tolist(), cm.sum(1)) if row > 0], dtype=object))
    out += [_metric_of_confusion("recall", classes, cm, cls=c, min_samples=1, **kw) for c in true_classes]
    return ObservedPerformance(tuple(out), len(y_true), float(confidence))
