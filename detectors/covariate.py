"""Per-feature covariate shift: one test per column plus one per missing-value rate.

Decision rule: a column has *drifted* when its p-value, adjusted together with
every other test of the same call (features and missing-value rates), is below ``alpha``
**and** its effect size reaches the practical floor of its kind:

================================  ======  =====================================================
effect                            floor   why this floor
================================  ======  =====================================================
``wasserstein_normed`` (numeric)  0.1     Wasserstein-1 / reference std: a 0.1 sigma mean
                                          shift; Evidently's default threshold
``cramers_v`` (categorical/bool)  0.1     Cohen's "small" association; a 10-point change of a
                                          50/50 split. Sample-balanced (as if both samples were
                                          equally large) so it does not depend on their ratio
``missing_rate_difference``       0.02    two percentage points more (or less) missing values
================================  ======  =====================================================

``is_shift`` is "any test drifted". Under no shift at all, "any BH-adjusted p < alpha" is
Simes' test, whose false-alarm rate is at most ``alpha`` for independent or positively
dependent tests, so the dataset-level verdict is calibrated at every sample size; the
floors only remove alarms, which is how it stays quiet on huge samples with negligible
shifts.

Constant columns are tested, not rejected: a numeric column with at most
``discrete_max_unique`` values is tested as categorical, so a constant reference column
gets a chi-square test that is defined (p = 1 when the current column holds the same
single value). Columns that are entirely missing in the reference are an error: nothing
was learned about them. Samples with fewer than ``min_samples`` non-missing values give
``status="insufficient_data"`` (p-values NaN, never drifted) instead of a guess.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from detectors.base import (
    DetectorInputError,
    Result,
    ShiftTest,
    check_alpha,
    check_correction,
    check_effect_floors,
    check_fitted,
    check_in,
    check_int,
    check_number,
    check_random_state,
)
from detectors.column_types import (
    ExcludedColumn,
    category_counts,
    check_frame,
    check_same_columns,
    finite_columns,
    finite_matrix,
    infer_column_types,
)
from detectors.correction import readjust
from detectors.decision import check_tests
from detectors.feature_tests import (
    DEFAULT_EFFECT_FLOORS,
    categorical_feature_test,
    categorical_shift_test,
    effect_floor,
    insufficient_test,
    mean_difference,
    missing_rate_tests,
    missing_rates,
    wasserstein_effect,
)
from detectors.univariate import (
    cvm_pvalue,
    ecdf_gap_statistics,
    ks_test,
    ks_tied_test,
)

__all__ = ["CovariateShiftDetector", "CovariateResult", "DEFAULT_EFFECT_FLOORS", "categorical_shift_test",
           "category_counts", "categorical_feature_test", "covariate_result", "effect_floor", "insufficient_test",
           "mean_difference", "missing_rate_tests", "missing_rates", "wasserstein_effect"]

@dataclass(frozen=True)
class CovariateResult(Result):
    """Outcome of :meth:`CovariateShiftDetector.test`; ``to_dict()`` gives the AuditResult's ``covariate`` block."""

    is_shift: bool
    features: tuple[ShiftTest, ...]
    missing: tuple[ShiftTest, ...]
    excluded: tuple[ExcludedColumn, ...]
    alpha: float
    correction: str
    n_reference: int
    n_current: int

    @property
    def tests(self) -> tuple[ShiftTest, ...]:
        """Every hypothesis test of this result (corrected together)."""
        return self.features + self.missing

    def with_tests(self, tests) -> "CovariateResult":
        """A copy holding re-corrected ``tests`` (order of :attr:`tests`), ``is_shift`` re-derived."""
        tests = check_tests(self, tests)
        k = len(self.features)
        return replace(self, features=tests[:k], missing=tests[k:], is_shift=any(t.drifted for t in tests))

    @property
    def drifted(self) -> tuple[str, ...]:
        """Names of the columns with a drifted distribution."""
        return tuple(t.name for t in self.features if t.drifted)


class CovariateShiftDetector:
    """Univariate covariate-shift tests for every column of a data frame.

    Parameters
    ----------
    alpha : float, default 0.05
        Level of the dataset-level decision, after correction.
    correction : {"bh", "holm", "bonferroni"}, default "bh"
    effect_floors : dict, optional
        Overrides of :data:`DEFAULT_EFFECT_FLOORS`, keyed by effect name.
    min_samples : int, default 30
        Fewest non-missing values per sample for a column to be tested.
    categorical_max_unique : int, default 100
        Text/categorical columns with more distinct reference values are excluded.
    discrete_max_unique : int, default 5
        Numeric columns with at most this many distinct reference values are tested as categorical.
    numeric_test : {"ks", "cvm"}, default "ks"
        Which numeric test decides; the other is reported in ``details``.
    min_expected : float, default 5.0
        Categories with a smaller expected count are pooled before the chi-square test.
    random_state : int, default 0
        Seed of the permutation p-value for tied (integer) numeric columns.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> ref = pd.DataFrame({"x": rng.normal(size=2000), "c": rng.choice(list("abc"), 2000)})
    >>> cur = pd.DataFrame({"x": rng.normal(0.5, 1, size=2000), "c": rng.choice(list("abc"), 2000)})
    >>> res = CovariateShiftDetector().fit(ref).test(cur)
    >>> res.is_shift, res.drifted
    (True, ('x',))
    >>> [(t.name, t.method, round(t.effect_size, 2)) for t in res.features]
    [('x', 'ks', 0.57), ('c', 'chi2', 0.01)]
    """

    def __init__(self, *, alpha=0.05, correction="bh", effect_floors=None, min_samples=30,
                 categorical_max_unique=100, discrete_max_unique=5, numeric_test="ks",
                 min_expected=5.0, random_state=0):
        self.alpha = alpha
        self.correction = correction
        self.effect_floors = effect_floors
        self.min_samples = min_samples
        self.categorical_max_unique = categorical_max_unique
        self.discrete_max_unique = discrete_max_unique
        self.numeric_test = numeric_test
        self.min_expected = min_expected
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        check_alpha(self.alpha)
        check_correction(self.correction)
        check_effect_floors("effect_floors", self.effect_floors, DEFAULT_EFFECT_FLOORS)
        check_int("min_samples", self.min_samples, minimum=1)
        check_int("categorical_max_unique", self.categorical_max_unique, minimum=1)
        check_int("discrete_max_unique", self.discrete_max_unique, minimum=0)
        check_in("numeric_test", self.numeric_test, ("ks", "cvm"))
        check_number("min_expected", self.min_expected, minimum=0)
        check_random_state(self.random_state)

    def _floor(self, effect_name: str) -> float:
        return effect_floor(effect_name, self.effect_floors)

    # ------------------------------------------------------------------ fit
    def fit(self, reference: pd.DataFrame) -> "CovariateShiftDetector":
        """Learn column types and the reference summaries the tests need.

        Parameters
        ----------
        reference : DataFrame of shape (n_reference, n_columns)
        """
        self._check_params()
        reference = check_frame(reference, role="reference")
        counts: dict[str, pd.Series] = {}
        types = infer_column_types(reference, categorical_max_unique=self.categorical_max_unique,
                                   discrete_max_unique=self.discrete_max_unique, counts=counts)
        matrix = finite_matrix(reference, types.numeric, role="reference")
        matrix.sort(axis=1)  # in place; NaN sorts last
        self.reference_valid_ = (~np.isnan(matrix)).sum(axis=1)
        self.reference_mean_ = np.array([row[:v].mean() for row, v in zip(matrix, self.reference_valid_)])
        self.reference_std_ = np.array([row[:v].std() for row, v in zip(matrix, self.reference_valid_)])
        self.reference_sorted_ = matrix
        self.reference_counts_ = counts
        self.reference_missing_ = {c: int(reference.shape[0] - v)
                                   for c, v in zip(types.numeric, self.reference_valid_)}
        self.reference_missing_.update({c: int(reference.shape[0] - self.reference_counts_[c].sum())
                                        for c in self.reference_counts_})
        empty = [c for c, k in self.reference_missing_.items() if k == reference.shape[0]]
        if empty:
            raise DetectorInputError(f"Reference columns {empty} are entirely missing; drop them or "
                                     "provide values.")
        self.feature_names_in_ = tuple(reference.columns)
        self.column_types_ = types
        self.n_reference_ = int(reference.shape[0])
        return self

    # ------------------------------------------------------------------ test
    def test(self, current: pd.DataFrame) -> CovariateResult:
        """Test every column of ``current`` against the reference.

        Parameters
        ----------
        current : DataFrame of shape (n_current, n_columns), same columns as the reference
        """
        check_fitted(self, "column_types_")
        self._check_params()
        current = check_frame(current, role="current")
        check_same_columns(self.feature_names_in_, current)
        n_cur = int(current.shape[0])
        types = self.column_types_
        features, current_missing = self._numeric_tests(current)
        for name in types.categorical + types.boolean:
            counts = category_counts(current[name])
            current_missing[name] = int(n_cur - counts.sum())
            features.append(self._categorical_test(name, counts, current_missing[name], n_cur))
        position = {name: i for i, name in enumerate(self.feature_names_in_)}
        features.sort(key=lambda t: position[t.name])  # report in the frame's column order
        missing = self._missing_tests(current_missing, n_cur)
        return covariate_result(features, missing, alpha=self.alpha, correction=self.correction,
                                excluded=types.excluded, n_reference=self.n_reference_, n_current=n_cur)

    def _rates(self, name: str, missing_current: int, n_cur: int) -> dict:
        return missing_rates(self.reference_missing_[name], self.n_reference_, missing_current, n_cur)

    def _numeric_tests(self, current: pd.DataFrame) -> tuple[list[ShiftTest], dict]:
        names = self.column_types_.numeric
        columns = finite_columns(current, names, role="current")
        n_cur = int(current.shape[0])
        # one column at a time in one buffer, sorted in place (NaN last): the same sorted values as a
        # sorted (columns x rows) matrix, without touching a fresh matrix's worth of memory
        buffer = np.empty(n_cur)
        floor = self._floor("wasserstein_normed")
        tests, missing = [], {}
        for j, name in enumerate(names):
            np.copyto(buffer, columns[j])
            buffer.sort()
            n_ref, m = int(self.reference_valid_[j]), int(n_cur - np.count_nonzero(np.isnan(buffer)))
            missing[name] = n_cur - m
            details = self._rates(name, n_cur - m, n_cur)
            if min(n_ref, m) < self.min_samples:
                tests.append(insufficient_test(name, self.numeric_test, "wasserstein_normed", floor, n_ref, m,
                                           "feature", details))
                continue
            tests.append(self._numeric_test(name, j, buffer[:m], details, floor))
        return tests, missing

    def _numeric_test(self, name, j, cur, details, floor) -> ShiftTest:
        ref = self.reference_sorted_[j, : self.reference_valid_[j]]
        n, m = ref.size, cur.size
        ks, cvm, wasserstein = ecdf_gap_statistics(ref, cur)
        ks, p_ks, ks_method = ks_test(ks, n, m)
        # ties (integer columns): the continuous KS p-value is conservative, so use the tie-correct one
        tied = ks_tied_test(ref, cur, random_state=(self.random_state or 0) + j) if self.numeric_test == "ks" else None
        if tied is not None:
            details["ks_p_value_continuous"] = p_ks
            _, p_ks, ks_method = tied  # same statistic (scipy's lattice value), tie-correct p-value
        p_cvm = cvm_pvalue(cvm, n, m)
        mean_cur, std_cur = float(cur.mean()), float(cur.std())
        mean_ref, std_ref = float(self.reference_mean_[j]), float(self.reference_std_[j])
        effect = wasserstein_effect(wasserstein, n, m, std_ref, std_cur)
        diff, diff_ci = mean_difference(mean_ref, std_ref, n, mean_cur, std_cur, m)
        details.update(ks_statistic=ks, ks_p_value=p_ks, ks_method=ks_method, cvm_statistic=cvm,
                       cvm_p_value=p_cvm, wasserstein=wasserstein, mean_reference=mean_ref,
                       mean_current=mean_cur, std_reference=std_ref, std_current=std_cur,
                       mean_difference=diff, mean_difference_ci=diff_ci)
        statistic, p_value = (ks, p_ks) if self.numeric_test == "ks" else (cvm, p_cvm)
        method = self.numeric_test if tied is None else ks_method
        return ShiftTest(name, method, statistic, p_value, p_value, effect, "wasserstein_normed",
                         floor, n, m, False, kind="feature", details=details)

    def _categorical_test(self, name, counts: pd.Series, missing_current: int, n_cur: int) -> ShiftTest:
        return categorical_feature_test(name, self.reference_counts_[name], counts,
                                        details=self._rates(name, missing_current, n_cur),
                                        floor=self._floor("cramers_v"), min_samples=self.min_samples,
                                        min_expected=self.min_expected)

    def _missing_tests(self, current_missing: dict, n_cur: int) -> list[ShiftTest]:
        names = [c for c in self.feature_names_in_ if c in current_missing]
        return missing_rate_tests(names, self.reference_missing_, current_missing, self.n_reference_, n_cur,
                                  floor=self._floor("missing_rate_difference"), min_samples=self.min_samples)


def covariate_result(features: list, missing: list, *, alpha: float, correction: str, excluded,
                     n_reference: int, n_current: int) -> CovariateResult:
    """Correct ``features + missing`` together and build the :class:`CovariateResult`."""
    adjusted = readjust(features + missing, alpha=alpha, correction=correction)
    features, missing = adjusted[: len(features)], adjusted[len(features):]
    return CovariateResult(is_shift=any(t.drifted for t in adjusted), features=tuple(features),
                           missing=tuple(missing), excluded=tuple(excluded), alpha=float(alpha),
                           correction=correction, n_reference=int(n_reference), n_current=int(n_current))
