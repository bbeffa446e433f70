"""Classifier two-sample test: can a model tell the current rows from the reference rows?

A classifier is cross-fitted (``n_folds`` stratified folds): each fold's rows are scored by
a model trained on the other folds, so every score is out-of-fold. The effect size is the
cross-fitted AUC minus 0.5 (floor 0.05, i.e. AUC >= 0.55 before a shift is declared).

Why the p-value is not a Mann–Whitney test on the pooled out-of-fold scores: the folds'
models are trained on each other's labels, so the per-fold statistics are positively
correlated under no shift (with a single feature the correlation is about 0.6) and the
pooled test is anti-conservative. Within one fold the Mann–Whitney z is exactly valid
(its model never saw those rows). We average the per-fold z scores and compare the mean
with N(0, 1): the variance of a mean of standard normal variables is at most 1 whatever
their correlation, so the test is valid under any dependence between folds. That
combination loses power as the folds get smaller, hence ``n_folds=2`` by default (each
half is scored by a model trained on the other half; this matches a single 50/50 split in
power and is more stable). The test is one-sided: an out-of-fold AUC below 0.5 is noise.

The AUC interval uses Hanley–McNeil standard errors per fold and their mean as the
standard error of the mean AUC (an upper bound under any correlation, as above).

Large samples are subsampled to ``max_samples`` rows per side (uniformly, seeded),
because the AUC's precision at a few thousand rows is already far finer than the 0.05
floor, while the fitting cost grows with n.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Self

import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_fitted,
    check_in,
    check_int,
    check_number,
    check_random_state,
)
from detectors.column_types import TabularEncoder, check_frame, check_same_columns, infer_column_types
from detectors.decision import SingleTestMixin
from detectors.intervals import z_value

__all__ = ["ClassifierTwoSampleDetector", "ClassifierTestResult", "mann_whitney_auc"]

CLASSIFIERS = ("hgb", "logistic")


@dataclass(frozen=True)
class ClassifierTestResult(SingleTestMixin, Result):
    """Outcome of :meth:`ClassifierTwoSampleDetector.test`."""

    is_shift: bool
    test: ShiftTest
    auc: float
    auc_ci: tuple[float, float]
    fold_aucs: tuple[float, ...]
    classifier: str
    n_folds: int
    n_reference: int  # rows used, after subsampling
    n_current: int


def mann_whitney_auc(scores_reference: np.ndarray, scores_current: np.ndarray) -> tuple[float, float, float]:
    """AUC of "current scores higher", its tie-corrected null z, and its Hanley–McNeil SE.

    Returns ``(auc, z, se)``; ``z`` is 0 when every score is tied.
    """
    n, m = len(scores_reference), len(scores_current)
    ranks = stats.rankdata(np.concatenate([scores_reference, scores_current]))
    u = ranks[n:].sum() - m * (m + 1) / 2
    auc = u / (n * m)
    _, tie_sizes = np.unique(ranks, return_counts=True)
    big_n = n + m
    variance = n * m / 12 * ((big_n + 1) - (tie_sizes ** 3 - tie_sizes).sum() / (big_n * (big_n - 1)))
    z = (u - n * m / 2) / np.sqrt(variance) if variance > 0 else 0.0
    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    se2 = (auc * (1 - auc) + (m - 1) * (q1 - auc ** 2) + (n - 1) * (q2 - auc ** 2)) / (n * m)
    return float(auc), float(z), float(np.sqrt(max(se2, 0.0)))


def subsample(frame: pd.DataFrame, cap: int, rng: np.random.Generator) -> pd.DataFrame:
    """At most ``cap`` rows drawn uniformly without replacement (row order kept)."""
    if len(frame) <= cap:
        return frame.reset_index(drop=True)
    rows = np.sort(rng.choice(len(frame), size=cap, replace=False))
    return frame.iloc[rows].reset_index(drop=True)


class EncodedReferenceDetector:
    """What the two detectors on an encoded, subsampled reference share (this classifier test and
    :class:`detectors.mmd.MMDDetector`): ``fit`` keeps a seeded subsample of at most ``max_samples``
    reference rows and an encoder fitted on it; ``test`` checks and subsamples ``current`` the same way.

    A subclass has the parameters ``max_samples``, ``max_categories`` and ``random_state`` and a
    ``_check_params()``.
    """

    max_samples: int
    max_categories: int
    random_state: int
    reference_: pd.DataFrame
    encoder_: TabularEncoder
    feature_names_in_: tuple

    def _check_params(self) -> None:
        raise NotImplementedError

    def fit(self, reference: pd.DataFrame) -> Self:
        """Keep a (subsampled) reference and learn its encoding.

        Parameters
        ----------
        reference : DataFrame of shape (n_reference, n_columns)
        """
        self._check_params()
        reference, self.reference_, self.encoder_ = encoded_reference(
            reference, max_samples=self.max_samples, max_categories=self.max_categories,
            random_state=self.random_state)
        self.feature_names_in_ = tuple(reference.columns)
        return self

    def _checked_current(self, current: pd.DataFrame) -> pd.DataFrame:
        """``current`` checked against the fitted reference and subsampled (seeded) to ``max_samples`` rows."""
        check_fitted(self, "encoder_")
        self._check_params()
        current = check_frame(current, role="current")
        check_same_columns(self.feature_names_in_, current)
        return subsample(current, int(self.max_samples), np.random.default_rng(self.random_state + 1))


class ClassifierTwoSampleDetector(EncodedReferenceDetector):
    """Cross-fitted classifier two-sample test with a valid p-value and an AUC interval.

    Parameters
    ----------
    classifier : {"hgb", "logistic"}, default "hgb"
        Histogram gradient boosting (finds non-linear and interaction shifts) or an L2
        logistic regression on the encoded features (fast; linear shifts only).
    n_folds : int, default 2
    max_samples : int, default 5000
        Rows per side used; larger samples are subsampled.
    alpha : float, default 0.05
    effect_floor : float, default 0.05
        Smallest AUC - 0.5 that counts as a shift.
    min_samples : int, default 30
    max_categories : int, default 20
        One-hot columns per categorical column (the rest share an "other" column).
    random_state : int, default 0

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> ref = pd.DataFrame(rng.normal(size=(1000, 3)), columns=["a", "b", "c"])
    >>> cur = pd.DataFrame(rng.normal(size=(1000, 3)), columns=["a", "b", "c"])
    >>> cur["c"] = cur["a"] * 0.9 + cur["c"] * 0.45  # synthetic: a new correlation, same marginal scale
    >>> res = ClassifierTwoSampleDetector(random_state=0).fit(ref).test(cur)
    >>> res.is_shift, round(res.auc, 2), res.test.p_value < 1e-6
    (True, 0.8, True)
    """

    def __init__(self, *, classifier="hgb", n_folds=2, max_samples=5000, alpha=0.05, effect_floor=0.05,
                 min_samples=30, max_categories=20, random_state=0):
        self.classifier = classifier
        self.n_folds = n_folds
        self.max_samples = max_samples
        self.alpha = alpha
        self.effect_floor = effect_floor
        self.min_samples = min_samples
        self.max_categories = max_categories
        self.random_state = random_state

    def _check_params(self) -> None:
        check_in("classifier", self.classifier, CLASSIFIERS)
        check_int("n_folds", self.n_folds, minimum=2)
        check_int("max_samples", self.max_samples, minimum=1)
        check_alpha(self.alpha)
        check_number("effect_floor", self.effect_floor, minimum=0, maximum=0.5)
        check_int("min_samples", self.min_samples, minimum=1)
        check_int("max_categories", self.max_categories, minimum=1)
        check_random_state(self.random_state)

    def _model(self):
        if self.classifier == "logistic":
            from sklearn.linear_model import LogisticRegression  # sklearn: ~0.5 s to import, paid only when run
            return LogisticRegression(C=1.0, max_iter=500)
        from sklearn.ensemble import HistGradientBoostingClassifier  # sklearn: ~0.5 s to import, paid only when run
        return HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=15, early_stopping=False,
                                              random_state=self.random_state)

    def test(self, current: pd.DataFrame) -> ClassifierTestResult:
        """Test ``current`` (same columns as the reference) for any multivariate shift."""
        current = self._checked_current(current)
        n, m = len(self.reference_), len(current)
        if min(n, m) < max(int(self.min_samples), 2 * int(self.n_folds)):
            return self._result_insufficient(n, m)
        x_ref, x_cur = self.encoder_.transform_pair(self.reference_, current)
        features = np.vstack([x_ref, x_cur])
        labels = np.r_[np.zeros(n, int), np.ones(m, int)]
        aucs, zs, ses = self._cross_fit(features, labels)
        auc, se = float(np.mean(aucs)), float(np.mean(ses))
        p_value = float(stats.norm.sf(np.mean(zs)))
        half = z_value(0.95) * se
        ci = (max(auc - half, 0.0), min(auc + half, 1.0))
        effect = auc - 0.5
        drifted = bool(p_value < self.alpha and effect >= self.effect_floor)
        test = ShiftTest("classifier", "classifier_auc", auc, p_value, p_value, effect, "auc_minus_half",
                         float(self.effect_floor), n, m, drifted, kind="multivariate",
                         details={"auc_ci": ci, "fold_z": tuple(zs), "classifier": self.classifier})
        return ClassifierTestResult(drifted, test, auc, ci, tuple(aucs), self.classifier, int(self.n_folds), n, m)

    def _cross_fit(self, features: np.ndarray, labels: np.ndarray):
        from sklearn.model_selection import StratifiedKFold  # sklearn: ~0.5 s to import, paid only when run

        folds = StratifiedKFold(n_splits=int(self.n_folds), shuffle=True, random_state=self.random_state)
        # One OpenMP thread for gradient boosting: audits run detectors in parallel workers,
        # and its threads then fight each other (measured 10x slower on 2 busy cores).
        limit = threadpool_limits(limits=1, user_api="openmp") if self.classifier == "hgb" \
            else contextlib.nullcontext()
        aucs, zs, ses = [], [], []
        with limit:
            for train, held_out in folds.split(features, labels):
                model = self._model().fit(features[train], labels[train])
                scores = model.predict_proba(features[held_out])[:, 1]
                is_current = labels[held_out] == 1
                auc, z, se = mann_whitney_auc(scores[~is_current], scores[is_current])
                aucs.append(auc)
                zs.append(z)
                ses.append(se)
        return aucs, zs, ses

    def _result_insufficient(self, n: int, m: int) -> ClassifierTestResult:
        nan = float("nan")
        test = ShiftTest("classifier", "classifier_auc", nan, nan, nan, nan, "auc_minus_half",
                         float(self.effect_floor), n, m, False, kind="multivariate", status="insufficient_data")
        return ClassifierTestResult(False, test, nan, (nan, nan), (), self.classifier, int(self.n_folds), n, m)


def _reject_all_missing(reference: pd.DataFrame) -> None:
    empty = [c for c in reference.columns if reference[c].isna().all()]
    if empty:
        raise DetectorInputError(f"Reference columns {empty} are entirely missing; drop them or provide values.")


def encoded_reference(reference: pd.DataFrame, *, max_samples: int, max_categories: int, random_state: int):
    """Validate ``reference``; return it, a seeded subsample of at most ``max_samples`` rows and
    an encoder fitted on that subsample (shared by the classifier and MMD tests)."""
    reference = check_frame(reference, role="reference")
    sample = subsample(reference, int(max_samples), np.random.default_rng(random_state))
    return reference, sample, TabularEncoder(max_categories=max_categories).fit(sample, learn_types(reference))


def learn_types(reference: pd.DataFrame):
    """Column types for a model encoding: every numeric column numeric, every text column one-hot."""
    _reject_all_missing(reference)
    types = infer_column_types(reference, categorical_max_unique=10 ** 9, discrete_max_unique=0)
    if not types.tested:
        raise DetectorInputError("No column can be encoded: " +
                                 ", ".join(f"{e.name} ({e.reason})" for e in types.excluded) + ".")
    return types
